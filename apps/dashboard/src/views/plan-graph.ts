/** A plan as a graph: subtasks as nodes coloured by status, in columns by depth, `need` as edges. */
import type { Task } from '../api.js';
import { svg } from '../dom.js';
import { clip } from '../format.js';

const NODE_WIDTH = 190;
const NODE_HEIGHT = 54;
const COLUMN_GAP = 70;
const ROW_GAP = 18;

export function planGraph(task: Task): SVGElement | undefined {
  const plan = task.plan ?? [];
  if (plan.length === 0) return undefined;
  const statusOf = new Map((task.children ?? []).map((child) => [child.id, child.status]));
  const byKey = new Map(plan.map((node) => [`${node.version}:${node.id}`, node]));
  const depth = new Map<string, number>();
  const depthOf = (key: string, seen = new Set<string>()): number => {
    if (depth.has(key)) return depth.get(key)!;
    const node = byKey.get(key);
    if (!node || seen.has(key)) return 0;
    seen.add(key);
    const value = Math.max(-1, ...node.need.map((need) => depthOf(`${node.version}:${need}`, seen))) + 1;
    depth.set(key, value);
    return value;
  };
  // A re-plan's subtasks come after the columns of the plan before it.
  const columnsBefore = new Map<number, number>();
  let offset = 0;
  for (const version of [...new Set(plan.map((node) => node.version))].sort((a, b) => a - b)) {
    columnsBefore.set(version, offset);
    offset +=
      Math.max(
        ...plan.filter((node) => node.version === version).map((node) => depthOf(`${node.version}:${node.id}`)),
      ) + 1;
  }
  const columns = new Map<number, string[]>();
  for (const node of plan) {
    const key = `${node.version}:${node.id}`;
    const column = depthOf(key) + columnsBefore.get(node.version)!;
    columns.set(column, [...(columns.get(column) ?? []), key]);
  }
  const position = new Map<string, { x: number; y: number }>();
  for (const [column, keys] of columns) {
    keys.forEach((key, row) =>
      position.set(key, { x: 10 + column * (NODE_WIDTH + COLUMN_GAP), y: 10 + row * (NODE_HEIGHT + ROW_GAP) }),
    );
  }
  const width =
    20 + Math.max(...[...columns.keys()].map((column) => column + 1)) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP;
  const height = 20 + Math.max(...[...columns.values()].map((keys) => keys.length)) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP;

  const edges = plan.flatMap((node) =>
    node.need.map((need) => {
      const from = position.get(`${node.version}:${need}`);
      const to = position.get(`${node.version}:${node.id}`)!;
      if (!from) return svg('g');
      const x1 = from.x + NODE_WIDTH;
      const y1 = from.y + NODE_HEIGHT / 2;
      const x2 = to.x;
      const y2 = to.y + NODE_HEIGHT / 2;
      return svg('path', {
        d: `M${x1},${y1} C${x1 + 35},${y1} ${x2 - 35},${y2} ${x2},${y2}`,
        class: 'edge',
        'marker-end': 'url(#arrow)',
      });
    }),
  );
  const nodes = plan.map((node) => {
    const { x, y } = position.get(`${node.version}:${node.id}`)!;
    const status = statusOf.get(node.taskId) ?? 'pending';
    const group = svg(
      'g',
      {
        class: `node status-${status}`,
        transform: `translate(${x},${y})`,
        'data-plan-id': node.id,
        tabindex: 0,
        role: 'link',
      },
      svg('title', {}, `${node.id} (${node.agent}, ${status}): ${node.task}`),
      svg('rect', { width: NODE_WIDTH, height: NODE_HEIGHT, rx: 8 }),
      svg(
        'text',
        { x: 10, y: 20, class: 'node-title' },
        `${node.id} · ${node.agent}`,
        svg('tspan', { class: 'node-status', dx: 6 }, status),
      ),
      svg('text', { x: 10, y: 40, class: 'node-task' }, clip(node.task, 27)),
    );
    group.addEventListener('click', () => (location.hash = `#/tasks/${encodeURIComponent(node.taskId)}`));
    return group;
  });
  return svg(
    'svg',
    {
      class: 'plan-graph',
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'img',
      'aria-label': 'The plan of this task',
    },
    svg(
      'defs',
      {},
      svg(
        'marker',
        {
          id: 'arrow',
          viewBox: '0 0 10 10',
          refX: 9,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto-start-reverse',
        },
        svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow' }),
      ),
    ),
    ...edges,
    ...nodes,
  );
}

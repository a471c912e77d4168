/**
 * Cells on a Redis Cluster (AGENTQ_CELLS): a real 3-master cluster of this test's own, the install in 3
 * cells, the API and a worker in this process. A batch of single-step tasks, planned tasks, tasks with a
 * concurrency key and with an idempotency key runs to the end with every event; every master carries a
 * share of the commands (each cell's hash tag is in its own third of the slots); the list pages across
 * the cells; no script, pipeline or BullMQ queue crosses slots (Redis would refuse it: CROSSSLOT).
 */
import type { TaskEvent, TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { keyPrefix, loadConfig } from '@agentq/config';
import { createKeys, keySlot } from '@agentq/store';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

let cluster: TestCluster;
let stack: Stack;

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  stack = await startStack({
    pools: ['planner', 'casual', 'file'],
    env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: '3' },
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: {
          content: `\`\`\`json\n${JSON.stringify({
            plan: [
              { id: '1', agent: 'casual', task: 'first part', need: [] },
              { id: '2', agent: 'casual', task: 'second part', need: ['1'] },
            ],
          })}\n\`\`\``,
        },
      },
      { match: (request) => system(request).startsWith('You write the final answer'), reply: { content: 'all done' } },
      { reply: { content: 'done' } },
    ],
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await cluster?.stop();
});

it('puts each cell in its own third of the slots, so each master of three holds one', () => {
  const config = loadConfig({ env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: '3' } });
  const keys = createKeys(keyPrefix(config), config.AGENTQ_CELLS);
  expect(new Set(keys.cells.map((cell) => cell.cellPrefix)).size).toBe(3);
  // Each in its own third of the slots: the helper's masters hold a third each, in order.
  keys.cells.forEach((cell, index) => {
    const slot = keySlot(cell.cellPrefix);
    expect(Math.floor(slot / (16384 / 3))).toBe(index);
  });
});

it('runs a batch to the end on 3 masters, each carrying a share of it, and lists it across the cells', async () => {
  const before = await cluster.commandsByMaster();
  const ids = await stack.submit([
    ...Array.from({ length: 90 }, (_, index) => ({ prompt: `say hello ${index}`, agent: 'casual' })),
    ...Array.from({ length: 3 }, (_, index) => ({ prompt: `plan this ${index}` })),
    ...Array.from({ length: 4 }, (_, index) => ({ prompt: `keyed ${index}`, agent: 'casual', concurrencyKey: 'one' })),
    { prompt: 'once only', agent: 'casual', idempotencyKey: 'cells-once' },
  ]);
  await Promise.all(ids.map((id) => waitForEnd(stack.api.url, id)));
  const views = await Promise.all(
    ids.map(async (id) => (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body),
  );
  expect(views.map((view) => view.status)).toEqual(ids.map(() => 'completed'));
  expect(views.filter((view) => view.agent === 'planner').map((view) => view.progress)).toEqual(
    Array.from({ length: 3 }, () => ({ done: 2, ended: 2, total: 2 })),
  );
  for (const id of ids) {
    const events = (await (
      await fetch(`${stack.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json()) as TaskEvent[];
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)!.type).toBe('task.completed');
  }
  // The same idempotency key again: the same task, from its cell.
  const [again] = await stack.submit([{ prompt: 'once only', agent: 'casual', idempotencyKey: 'cells-once' }]);
  expect(again).toBe(ids.at(-1));

  const after = await cluster.commandsByMaster();
  const ran = [...after].map(([port, count]) => count - (before.get(port) ?? 0));
  const total = ran.reduce((sum, count) => sum + count, 0);
  // A third each, give or take how 98 tasks happened to fall (the bench runs 3,000: B11).
  for (const count of ran) expect(count / total).toBeGreaterThan(0.15);

  // Pages of 7 across the three cells: every task once, newest first.
  const seen: string[] = [];
  let cursor: string | null | undefined;
  do {
    const page = (
      await getJson<{ tasks: TaskView[]; nextCursor: string | null }>(
        `${stack.api.url}/v1/tasks?limit=7&fields=summary${cursor ? `&cursor=${cursor}` : ''}`,
      )
    ).body;
    seen.push(...page.tasks.map((task) => task.id));
    cursor = page.nextCursor;
  } while (cursor);
  expect(new Set(seen).size).toBe(seen.length);
  expect(seen.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
}, 120_000);

/**
 * Removes submitted tasks with everything they left in Redis: their records, memory, events, shared
 * memory and DAG state, their subtasks' and children's (at any depth), and their index entries. Used when their retention is over
 * (expire-tasks.ts) and when their owner deletes one (`DELETE /v1/tasks/:id`). Every step is idempotent:
 * two removals of the same task at once leave the same nothing.
 */
import { cellPipeline } from './cell-pipeline.js';
import { TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';
import type { TaskStore } from './task-store.js';
import { DEFAULT_TENANT } from './task-ids.js';
import { luaScript } from './lua-script.js';

/** A task of a tree that has not ended: the root itself, or one of its subtasks or children. */
export interface Unended {
  id: string;
  /** Its status; null for a subtask planned but not created yet. */
  status: TaskStatus | null;
}

/**
 * For each of `roots`, the first task of its tree (itself, then its subtasks and children, at any
 * depth) that has not ended, if any: a tree may be removed only once nothing of it runs, or a worker
 * would write on (and in its folder) after the removal. A round trip a level of the trees, and one more,
 * for any number of roots. A root that is gone counts as ended.
 */
export async function unendedInTrees(store: TaskStore, roots: readonly string[]): Promise<Array<Unended | undefined>> {
  const trees = await treesOf(store, roots);
  const statuses = await store.statuses(trees.flatMap((tree) => tree.map((task) => task.id)));
  let next = 0;
  return trees.map((tree) => {
    const tasks = statuses.slice(next, (next += tree.length));
    // The root first: a root that is gone counts as ended; a child not created yet (planned) as not.
    const [root, ...descendants] = tasks;
    if (root?.status && !TERMINAL_STATUSES.has(root.status)) return root;
    return descendants.find((task) => !task.status || !TERMINAL_STATUSES.has(task.status));
  });
}

/**
 * Every task of each root's tree, the root first, then its subtasks and children and theirs, level by
 * level (a child a `delegate` call started may have children too), with its record's tenant and batch.
 * A round trip a level: a tree is at most MAX_TASK_DEPTH (10) levels below its root.
 */
async function treesOf(
  store: TaskStore,
  roots: readonly string[],
): Promise<Array<Array<{ id: string; tenant: string | null; batch: string | null }>>> {
  const trees = roots.map((rootId) => [{ id: rootId, tenant: null as string | null, batch: null as string | null }]);
  let level = roots.map((rootId, tree) => ({ id: rootId, tree }));
  for (let depth = 0; level.length && depth <= 11; depth++) {
    const read = cellPipeline(store.redis);
    for (const task of level) read.hmget(store.keys.task(task.id), 'children', 'tenant', 'batch');
    const rows = ((await read.exec()) ?? []).map(([, values]) => values as Array<string | null>);
    const next: typeof level = [];
    level.forEach((task, index) => {
      const [children = null, tenant = null, batch = null] = rows[index] ?? [];
      if (depth === 0) trees[task.tree]![0] = { id: task.id, tenant, batch };
      for (const child of JSON.parse(children ?? '[]') as string[]) {
        trees[task.tree]!.push({ id: child, tenant, batch: null });
        next.push({ id: child, tree: task.tree });
      }
    });
    level = next;
  }
  return trees;
}

const REMOVE_TREE = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'remove-tree',
  keys: ['tenantBytesKey'],
  args: ['records'],
});

/** Returns every removed id, subtasks included (for their work directories). */
export async function removeTaskTrees(
  store: TaskStore,
  roots: readonly string[],
  options: { workdirsLeft?: boolean } = {},
): Promise<string[]> {
  const { redis, keys } = store;
  REMOVE_TREE.define(redis);
  const trees = await treesOf(store, roots);

  const remove = cellPipeline(redis);
  const everyId: string[] = [];
  roots.forEach((rootId, index) => {
    const tree = trees[index]!;
    const { tenant, batch } = tree[0]!;
    const ids = tree.map((task) => task.id);
    everyId.push(...ids);
    const taskKeys = ids.map((id) => keys.task(id));
    const rest = [
      ...ids.flatMap((id) => [keys.messages(id), keys.events(id), keys.packedEvents(id), keys.doneNeeds(id)]),
      // A child given files of its own keeps them under its own id.
      ...ids.map((id) => keys.inputs(id)),
      // Its deliveries go with it (a due one left in the sets is dropped by the sender, which finds none).
      keys.webhooks(rootId),
      keys.finishedSubtasks(rootId),
      keys.scratchpad(rootId),
    ];
    const owner = tenant ?? DEFAULT_TENANT;
    const cell = keys.cellOf(rootId);
    // A tree is one tenant's: its subtasks are its root's tenant's.
    void REMOVE_TREE.run(remove, {
      keys: { tenantBytesKey: cell.tenantBytes(owner) },
      args: { records: taskKeys.length },
      restKeys: [...taskKeys, ...rest],
    });
    remove.zrem(cell.tenantTasks(owner), rootId);
    if (batch) remove.zrem(cell.tenantBatch(owner, batch), rootId);
    remove.zrem(cell.expiry, rootId);
    remove.zrem(cell.toCompact, ...ids);
  });
  // Their folders are on the workers' volume: a worker's sweep removes them (removeLeftWorkdirs).
  if (options.workdirsLeft && everyId.length) remove.sadd(keys.workdirsToRemove, ...everyId);
  await remove.exec();
  return everyId;
}

/** Removes the work directories that deletions left to the workers, a batch at a time; returns how many. */
export async function removeLeftWorkdirs(
  store: TaskStore,
  removeWorkdir: (taskId: string) => Promise<void>,
  batchSize = 500,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const ids = await store.redis.spop(store.keys.workdirsToRemove, batchSize);
    await Promise.all(ids.map((id) => removeWorkdir(id)));
    removed += ids.length;
    if (ids.length < batchSize) return removed;
  }
}

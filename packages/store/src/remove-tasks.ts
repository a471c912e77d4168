/**
 * Removes submitted tasks with everything they left in Redis: their records, memory, events, shared
 * memory and DAG state, their subtasks', and their index entries. Used when their retention is over
 * (expire-tasks.ts) and when their owner deletes one (`DELETE /v1/tasks/:id`). Every step is idempotent:
 * two removals of the same task at once leave the same nothing.
 */
import { cellPipeline } from './cell-pipeline.js';
import { TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';
import type { TaskStore } from './task-store.js';
import { DEFAULT_TENANT } from './task-ids.js';
import { luaScript } from './lua-script.js';

/** A task of a tree that has not ended: the root itself, or one of its subtasks. */
export interface Unended {
  id: string;
  /** Its status; null for a subtask planned but not created yet. */
  status: TaskStatus | null;
}

/**
 * For each of `roots`, the first task of its tree (itself, then its subtasks) that has not ended, if
 * any: a tree may be removed only once nothing of it runs, or a subtask's worker would write on (and
 * in its folder) after the removal. Two round trips for any number of roots. A root that is gone
 * counts as ended.
 */
export async function unendedInTrees(store: TaskStore, roots: readonly string[]): Promise<Array<Unended | undefined>> {
  const { redis, keys } = store;
  const read = cellPipeline(redis);
  for (const rootId of roots) read.hmget(keys.task(rootId), 'status', 'children');
  const records = ((await read.exec()) ?? []).map(([, values]) => values as Array<string | null>);
  const childrenOf = records.map(([, children]) => JSON.parse(children ?? '[]') as string[]);
  const statuses = await store.statuses(childrenOf.flat());
  let next = 0;
  return roots.map((rootId, index) => {
    const children = statuses.slice(next, (next += childrenOf[index]!.length));
    const status = records[index]?.[0] as TaskStatus | null | undefined;
    if (status && !TERMINAL_STATUSES.has(status)) return { id: rootId, status };
    return children.find((child) => !child.status || !TERMINAL_STATUSES.has(child.status));
  });
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
  const read = cellPipeline(redis);
  for (const rootId of roots) read.hmget(keys.task(rootId), 'children', 'tenant', 'batch');
  const records = ((await read.exec()) ?? []).map(([, values]) => values as Array<string | null>);

  const remove = cellPipeline(redis);
  const everyId: string[] = [];
  roots.forEach((rootId, index) => {
    const [children, tenant, batch] = records[index] ?? [null, null, null];
    const ids = [rootId, ...(JSON.parse(children ?? '[]') as string[])];
    everyId.push(...ids);
    const taskKeys = ids.map((id) => keys.task(id));
    const rest = [
      ...ids.flatMap((id) => [keys.messages(id), keys.events(id), keys.packedEvents(id), keys.doneNeeds(id)]),
      // Its deliveries go with it (a due one left in the sets is dropped by the sender, which finds none).
      keys.webhooks(rootId),
      keys.inputs(rootId),
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

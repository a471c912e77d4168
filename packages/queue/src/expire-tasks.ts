/**
 * Removes the data of submitted tasks whose retention is over: their records, memory, events,
 * shared memory and DAG state, and those of their subtasks. Idempotent, so every worker process can
 * sweep without coordination.
 */
import type { TaskStore } from './task-store.js';
import { DEFAULT_TENANT, TASK_STATUSES } from './task-schemas.js';

/** Returns the ids of the tasks removed (roots only). `onRemoved` gets every removed task id, for files. */
export async function expireTasks(options: { store: TaskStore; now?: number; limit?: number; onRemoved?: (taskId: string) => Promise<void> }): Promise<string[]> {
  const { store } = options;
  const { redis, keys } = store;
  const due = await redis.zrangebyscore(keys.expiry, '-inf', options.now ?? Date.now(), 'LIMIT', 0, options.limit ?? 200);
  for (const rootId of due) {
    const [childList, tenant] = await redis.hmget(keys.task(rootId), 'children', 'tenant');
    const children = JSON.parse(childList ?? '[]') as string[];
    const ids = [rootId, ...children];
    const doomed = ids.flatMap((id) => [keys.task(id), keys.messages(id), keys.events(id), keys.doneNeeds(id)]);
    doomed.push(keys.finishedSubtasks(rootId), keys.scratchpad(rootId));
    const pipeline = redis.pipeline();
    pipeline.del(...doomed);
    pipeline.zrem(keys.allTasks, rootId);
    pipeline.zrem(keys.tenantTasks(tenant ?? DEFAULT_TENANT), rootId);
    for (const status of TASK_STATUSES) {
      pipeline.zrem(keys.tasksWithStatus(status), rootId);
      pipeline.zrem(keys.tenantTasksWithStatus(tenant ?? DEFAULT_TENANT, status), rootId);
    }
    pipeline.zrem(keys.expiry, rootId);
    await pipeline.exec();
    for (const id of ids) await options.onRemoved?.(id);
  }
  return due;
}

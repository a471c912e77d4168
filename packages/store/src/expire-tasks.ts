/**
 * Removes the data of submitted tasks whose retention is over, and their subtasks' (remove-tasks.ts).
 * Every worker process sweeps, and they share the work (claim-due.ts): a claimed batch is removed in one
 * pipeline, which also drops it from the due set.
 */
import type { TaskStore } from './task-store.js';
import { claimDue } from './claim-due.js';
import { removeTaskTrees } from './remove-tasks.js';

/** How long a claimed batch is a sweeper's before another may take it. */
const LEASE_MS = 5 * 60_000;

export interface ExpireTasksOptions {
  store: TaskStore;
  /** What counts as now (ms since the epoch). Default the clock. */
  now?: number;
  /** Tasks per claim. Default 500. */
  batchSize?: number;
  /** Claims at most, before returning (the next sweep goes on). Default: until nothing is due. */
  maxBatches?: number;
  /** Called with every removed task's id, subtasks included (for their work directories). */
  onRemoved?: (taskId: string) => Promise<void>;
}

/** Returns the ids of the submitted tasks removed. */
export async function expireTasks(options: ExpireTasksOptions): Promise<string[]> {
  const { store } = options;
  const { redis, keys } = store;
  const batchSize = options.batchSize ?? 500;
  const removed: string[] = [];
  // Each cell's due tasks, in turn.
  for (const cell of keys.cells) {
    for (let batch = 0; batch < (options.maxBatches ?? Infinity); batch++) {
      const now = options.now ?? Date.now();
      const roots = await claimDue(redis, cell.expiry, { now, count: batchSize, leaseMs: LEASE_MS });
      if (roots.length === 0) break;
      const everyId = await removeTaskTrees(store, roots);
      if (options.onRemoved) await Promise.all(everyId.map((id) => options.onRemoved!(id)));
      removed.push(...roots);
      if (roots.length < batchSize) break;
    }
  }
  return removed;
}

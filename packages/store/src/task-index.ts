/**
 * The task lists: one sorted set per tenant, with a task's status in its score: `band(status) *
 * STATUS_SPAN + order`. A status change is one ZADD (the member's score moves to its new band), where a
 * set per status cost a ZREM and a ZADD; a status's tasks are one score range (listed, counted with
 * ZCOUNT); every status's, newest first, is the merge of the bands' ranges, in one round trip. An
 * admin's list of every tenant's tasks merges the tenants' lists the same way (the orders are one
 * counter's): a list of every tenant's cost every task 3 more writes (create, claim, end).
 */
import { cellPipeline } from './cell-pipeline.js';
import { TASK_STATUSES, type TaskStatus } from '@agentq/contract';
import type { Redis } from 'ioredis';
import { execPipeline } from './pipeline-replies.js';
import { STATUS_CODES, UNFINISHED_CODES } from './status-codes.js';

/** Room for 2^44 tasks' orders per band; 512 bands stay exact as doubles (below 2^53). */
export const STATUS_SPAN = 2 ** 44;

/** A status's band: its stored code (status-codes.ts). */
export function statusBand(status: TaskStatus): number {
  return STATUS_CODES[status];
}

/** The score of a task of `order` in `status`'s band. */
export function indexScore(status: TaskStatus, order: number): number {
  return statusBand(status) * STATUS_SPAN + order;
}

/** A listed task as an index holds it: its id, status and order (its page cursor). */
export interface IndexEntry {
  id: string;
  status: TaskStatus;
  order: number;
}

/**
 * The newest entries of some indexes (one, or every tenant's in every cell: their orders are one
 * counter's) below `beforeOrder` (exclusive; default none), of some statuses (default every one; their
 * bands merged by order), at most `count`.
 */
export async function newestInIndex(
  redis: Redis,
  key: string | readonly string[],
  options: { statuses?: readonly TaskStatus[]; beforeOrder?: number; count: number },
): Promise<IndexEntry[]> {
  const indexes = typeof key === 'string' ? [key] : key;
  const statuses = options.statuses ?? TASK_STATUSES;
  const pipeline = cellPipeline(redis);
  for (const index of indexes) {
    for (const status of statuses) {
      const base = statusBand(status) * STATUS_SPAN;
      const max = options.beforeOrder === undefined ? base + STATUS_SPAN - 1 : `(${base + options.beforeOrder}`;
      pipeline.zrevrangebyscore(index, max, base, 'WITHSCORES', 'LIMIT', 0, options.count);
    }
  }
  const ranges = (await execPipeline(pipeline)) as string[][];
  const entries: IndexEntry[] = [];
  ranges.forEach((range, index) => {
    const status = statuses[index % statuses.length]!;
    const base = statusBand(status) * STATUS_SPAN;
    for (let at = 0; at < range.length; at += 2)
      entries.push({ id: range[at]!, status, order: Number(range[at + 1]) - base });
  });
  return entries.sort((a, b) => b.order - a.order).slice(0, options.count);
}

/** How many tasks some indexes (one, or every tenant's) hold in each status. */
export async function countByStatus(
  redis: Redis,
  key: string | readonly string[],
): Promise<Record<TaskStatus, number>> {
  const indexes = typeof key === 'string' ? [key] : key;
  const pipeline = cellPipeline(redis);
  for (const index of indexes) {
    for (const status of TASK_STATUSES) {
      const base = statusBand(status) * STATUS_SPAN;
      pipeline.zcount(index, base, base + STATUS_SPAN - 1);
    }
  }
  const counts = (await execPipeline(pipeline)) as number[];
  return Object.fromEntries(
    TASK_STATUSES.map((status, at) => [
      status,
      counts.reduce((sum, count, index) => sum + (index % TASK_STATUSES.length === at ? count : 0), 0),
    ]),
  ) as Record<TaskStatus, number>;
}

/** The highest score of a task not ended: its tasks are an index's scores 0 to this. */
export const UNFINISHED_MAX_SCORE = UNFINISHED_CODES * STATUS_SPAN - 1;

/** How many of an index's tasks have not ended: one ZCOUNT. */
export async function countUnfinished(redis: Redis, key: string): Promise<number> {
  return redis.zcount(key, 0, UNFINISHED_MAX_SCORE);
}

/**
 * The task lists: one sorted set per scope (every tenant's tasks, and each tenant's own), with a task's
 * status in its score: `band(status) * STATUS_SPAN + order`. A status change is one ZADD per scope
 * (the member's score moves to its new band), where a set per status cost a ZREM and a ZADD per scope;
 * a status's tasks are one score range (listed, counted with ZCOUNT); every status's, newest first,
 * is the merge of the bands' ranges, in one round trip.
 */
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
 * The newest entries of an index below `beforeOrder` (exclusive; default none), of some statuses
 * (default every one; their bands merged by order), at most `count`.
 */
export async function newestInIndex(
  redis: Redis,
  key: string,
  options: { statuses?: readonly TaskStatus[]; beforeOrder?: number; count: number },
): Promise<IndexEntry[]> {
  const statuses = options.statuses ?? TASK_STATUSES;
  const pipeline = redis.pipeline();
  for (const status of statuses) {
    const base = statusBand(status) * STATUS_SPAN;
    const max = options.beforeOrder === undefined ? base + STATUS_SPAN - 1 : `(${base + options.beforeOrder}`;
    pipeline.zrevrangebyscore(key, max, base, 'WITHSCORES', 'LIMIT', 0, options.count);
  }
  const ranges = (await execPipeline(pipeline)) as string[][];
  const entries: IndexEntry[] = [];
  ranges.forEach((range, index) => {
    const base = statusBand(statuses[index]!) * STATUS_SPAN;
    for (let at = 0; at < range.length; at += 2)
      entries.push({ id: range[at]!, status: statuses[index]!, order: Number(range[at + 1]) - base });
  });
  return entries.sort((a, b) => b.order - a.order).slice(0, options.count);
}

/** How many tasks an index holds in each status. */
export async function countByStatus(redis: Redis, key: string): Promise<Record<TaskStatus, number>> {
  const pipeline = redis.pipeline();
  for (const status of TASK_STATUSES) {
    const base = statusBand(status) * STATUS_SPAN;
    pipeline.zcount(key, base, base + STATUS_SPAN - 1);
  }
  const counts = (await execPipeline(pipeline)) as number[];
  return Object.fromEntries(TASK_STATUSES.map((status, index) => [status, counts[index]!])) as Record<
    TaskStatus,
    number
  >;
}

/** The highest score of a task not ended: its tasks are an index's scores 0 to this. */
export const UNFINISHED_MAX_SCORE = UNFINISHED_CODES * STATUS_SPAN - 1;

/** How many of an index's tasks have not ended: one ZCOUNT. */
export async function countUnfinished(redis: Redis, key: string): Promise<number> {
  return redis.zcount(key, 0, UNFINISHED_MAX_SCORE);
}

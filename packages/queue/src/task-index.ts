/**
 * The task lists: one sorted set per scope (every tenant's tasks, and each tenant's own), with a task's
 * status in its score: `band(status) * STATUS_SPAN + order`. A status change is one ZADD per scope
 * (the member's score moves to its new band), where a set per status cost a ZREM and a ZADD per scope;
 * a status's tasks are one score range (listed, counted with ZCOUNT); every status's, newest first,
 * is the merge of the bands' ranges, in one round trip.
 */
import { TASK_STATUSES, type TaskStatus } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';

/** Room for 2^44 tasks' orders per band; 8 bands stay exact as doubles (below 2^53). */
export const STATUS_SPAN = 2 ** 44;

/** A status's band: its place in TASK_STATUSES. */
export function statusBand(status: TaskStatus): number {
  return TASK_STATUSES.indexOf(status);
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
export async function newestInIndex(redis: Redis, key: string, options: { statuses?: readonly TaskStatus[]; beforeOrder?: number; count: number }): Promise<IndexEntry[]> {
  const statuses = options.statuses ?? TASK_STATUSES;
  const pipeline = redis.pipeline();
  for (const status of statuses) {
    const base = statusBand(status) * STATUS_SPAN;
    const max = options.beforeOrder === undefined ? base + STATUS_SPAN - 1 : `(${base + options.beforeOrder}`;
    pipeline.zrevrangebyscore(key, max, base, 'WITHSCORES', 'LIMIT', 0, options.count);
  }
  const ranges = ((await pipeline.exec()) ?? []).map(([error, entries]) => {
    if (error) throw error;
    return entries as string[];
  });
  const entries: IndexEntry[] = [];
  ranges.forEach((range, index) => {
    const base = statusBand(statuses[index]!) * STATUS_SPAN;
    for (let at = 0; at < range.length; at += 2) entries.push({ id: range[at]!, status: statuses[index]!, order: Number(range[at + 1]) - base });
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
  const counts = ((await pipeline.exec()) ?? []).map(([error, count]) => {
    if (error) throw error;
    return count as number;
  });
  return Object.fromEntries(TASK_STATUSES.map((status, index) => [status, counts[index]!])) as Record<TaskStatus, number>;
}

const MIGRATE_PAGE = 5_000;

/**
 * Moves the lists of an earlier version (a sorted set per status and scope, scored by order, and one
 * of every status) into these, then removes them; a no-op once done. Safe with this version's
 * processes running: an entry already here (written since) is kept as it is.
 */
export async function migrateTaskIndexes(redis: Redis, keys: Keys): Promise<number> {
  const { prefix } = keys;
  let moved = 0;
  for (const [pattern, target] of [
    [`${prefix}:tasks:status:*`, () => keys.allTasks],
    [`${prefix}:tenant:*:tasks:status:*`, (key: string) => keys.tenantTasks(key.slice(`${prefix}:tenant:`.length, key.lastIndexOf(':tasks:status:')))],
  ] as const) {
    for (const key of await scanKeys(redis, pattern)) {
      const status = key.slice(key.lastIndexOf(':') + 1) as TaskStatus;
      if (!TASK_STATUSES.includes(status)) continue;
      // Nothing writes these any more: pages by rank stay put.
      for (let start = 0; ; start += MIGRATE_PAGE) {
        const entries = await redis.zrange(key, start, start + MIGRATE_PAGE - 1, 'WITHSCORES');
        const args = entries.flatMap((value, index) => (index % 2 === 0 ? [String(indexScore(status, Number(entries[index + 1]))), value] : []));
        if (args.length) await redis.zadd(target(key), 'NX', ...args);
        moved += args.length / 2;
        if (entries.length < 2 * MIGRATE_PAGE) break;
      }
      await redis.unlink(key);
    }
  }
  // The old lists of every status: each of their tasks was in a status's list too.
  const oldAll = [`${prefix}:tasks`, ...(await scanKeys(redis, `${prefix}:tenant:*:tasks`))];
  await redis.unlink(...oldAll);
  return moved;
}

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** At a process's start: the lists of an earlier version moved (said in the log), or a warning if Redis is away (the next start moves them). */
export async function upgradeTaskIndexes(redis: Redis, keys: Keys, logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void }): Promise<void> {
  try {
    const moved = await migrateTaskIndexes(redis, keys);
    if (moved > 0) logger.info({ moved }, 'moved the task lists of an earlier version to the lists by status score');
  } catch (error) {
    logger.warn({ err: error }, 'could not move the task lists of an earlier version yet; the next start tries again');
  }
}

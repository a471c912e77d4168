/**
 * The task lists: one sorted set per scope (every tenant's tasks, and each tenant's own), with a task's
 * status in its score: `band(status) * STATUS_SPAN + order`. A status change is one ZADD per scope
 * (the member's score moves to its new band), where a set per status cost a ZREM and a ZADD per scope;
 * a status's tasks are one score range (listed, counted with ZCOUNT); every status's, newest first,
 * is the merge of the bands' ranges, in one round trip.
 */
import { TASK_STATUSES, TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { execPipeline } from './pipeline-replies.js';

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

/** The statuses not ended (pending, queued, running, waiting) are the first bands: one range holds them. */
const UNFINISHED_BANDS = TASK_STATUSES.findIndex((status) => TERMINAL_STATUSES.has(status));
if (TASK_STATUSES.slice(UNFINISHED_BANDS).some((status) => !TERMINAL_STATUSES.has(status)))
  throw new Error('TASK_STATUSES must list the statuses not ended first');

/** The highest score of a task not ended: its tasks are an index's scores 0 to this. */
export const UNFINISHED_MAX_SCORE = UNFINISHED_BANDS * STATUS_SPAN - 1;

/** How many of an index's tasks have not ended: one ZCOUNT. */
export async function countUnfinished(redis: Redis, key: string): Promise<number> {
  return redis.zcount(key, 0, UNFINISHED_MAX_SCORE);
}

const MIGRATE_PAGE = 1_000;

/**
 * KEYS: [the list]; ARGV: [the task key prefix, then task ids]. Each task goes into its status's band,
 * as its record says now (the record, not an old list, is the truth), in one script: a status change
 * by a running process cannot fall between the read and the write.
 */
const MOVE_SCRIPT = `
local bands = {${TASK_STATUSES.map((status, band) => `['${status}'] = ${band}`).join(', ')}}
for index = 2, #ARGV do
  local record = redis.call('HMGET', ARGV[1] .. ARGV[index], 'status', 'order')
  local band = record[1] and bands[record[1]]
  if band and record[2] then redis.call('ZADD', KEYS[1], string.format('%.0f', band * ${STATUS_SPAN} + tonumber(record[2])), ARGV[index]) end
end
`;

/**
 * Moves the lists of an earlier version (a sorted set of every status per scope, scored by order, and
 * one per status and scope) into these, then removes them; one `EXISTS` once done. Each task's place
 * comes from its record, so it is right with this version's processes running, and again after
 * processes of the earlier version wrote their lists meanwhile (the next start moves what they wrote:
 * each of their writes touches a list of every tenant's, which the `EXISTS` looks at).
 */
export async function migrateTaskIndexes(redis: Redis, keys: Keys): Promise<number> {
  const { prefix } = keys;
  const everyTenant = [`${prefix}:tasks`, ...TASK_STATUSES.map((status) => `${prefix}:tasks:status:${status}`)];
  if ((await redis.exists(...everyTenant)) === 0) return 0;
  const perTenant = [
    ...(await scanKeys(redis, `${prefix}:tenant:*:tasks`)),
    ...(await scanKeys(redis, `${prefix}:tenant:*:tasks:status:*`)),
  ];
  const tenantOf = (key: string) => key.slice(`${prefix}:tenant:`.length, key.lastIndexOf(':tasks'));
  // A task is in a list of every status and in its status's: counted once per list it joins.
  const moved = new Set<string>();
  for (const key of [...everyTenant, ...perTenant]) {
    const target = key.startsWith(`${prefix}:tenant:`) ? keys.tenantTasks(tenantOf(key)) : keys.allTasks;
    // Nothing of this version writes these: pages by rank stay put.
    for (let start = 0; ; start += MIGRATE_PAGE) {
      const ids = await redis.zrange(key, start, start + MIGRATE_PAGE - 1);
      if (ids.length) await redis.eval(MOVE_SCRIPT, 1, target, keys.task(''), ...ids);
      for (const id of ids) moved.add(`${target}\n${id}`);
      if (ids.length < MIGRATE_PAGE) break;
    }
  }
  await redis.unlink(...everyTenant, ...perTenant);
  return moved.size;
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
export async function upgradeTaskIndexes(
  redis: Redis,
  keys: Keys,
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void },
): Promise<void> {
  try {
    const moved = await migrateTaskIndexes(redis, keys);
    if (moved > 0) logger.info({ moved }, 'moved the task lists of an earlier version to the lists by status score');
  } catch (error) {
    logger.warn({ err: error }, 'could not move the task lists of an earlier version yet; the next start tries again');
  }
}

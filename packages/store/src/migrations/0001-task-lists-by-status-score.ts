/**
 * Storage version 1: the task lists by status score. Before it, each scope (every tenant's, each
 * tenant's) had a sorted set of every status scored by order, and one per status; now one sorted set
 * per scope holds each task in its status's band (task-index.ts).
 */
import { TASK_STATUSES } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { luaScript } from '../lua-script.js';
import { STATUS_SPAN } from '../task-index.js';

const MIGRATE_PAGE = 1_000;

/** The status codes as they were at version 1 (a migration is frozen: later codes do not change it). */
const MOVE = luaScript({
  dir: new URL('../../scripts/', import.meta.url),
  name: 'move-task-lists',
  keys: ['listKey'],
  args: [],
  constants: {
    STATUS_SPAN,
    PENDING: 0,
    QUEUED: 1,
    RUNNING: 2,
    WAITING: 3,
    COMPLETED: 4,
    FAILED: 5,
    SKIPPED: 6,
    CANCELLED: 7,
  },
});

/**
 * Moves the lists of an earlier version (a sorted set of every status per scope, scored by order, and
 * one per status and scope) into these, then removes them; one `EXISTS` once done. Each task's place
 * comes from its record, so it is right with this version's processes running, and again after
 * processes of the earlier version wrote their lists meanwhile (the next start moves what they wrote:
 * each of their writes touches a list of every tenant's, which the `EXISTS` looks at). Run by
 * migrate-storage.ts while the data is below version 1.
 */
export async function moveTaskLists(redis: Redis, keys: Keys): Promise<number> {
  const { prefix } = keys;
  // Installs of this version had one cell, the install's own prefix (a cell count never changes, cell-count.ts).
  const cell = keys.cells[0]!;
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
    // The list of every tenant's tasks of version 1 to 2 (version 3 merges the tenants' lists instead).
    const target = key.startsWith(`${prefix}:tenant:`) ? cell.tenantTasks(tenantOf(key)) : `${prefix}:tasks:index`;
    // Nothing of this version writes these: pages by rank stay put.
    for (let start = 0; ; start += MIGRATE_PAGE) {
      const ids = await redis.zrange(key, start, start + MIGRATE_PAGE - 1);
      if (ids.length)
        await MOVE.run(redis, {
          keys: { listKey: target },
          args: {},
          restKeys: ids.map((id) => keys.task(id)),
          restArgs: ids,
        });
      for (const id of ids) moved.add(`${target}\n${id}`);
      if (ids.length < MIGRATE_PAGE) break;
    }
  }
  await redis.unlink(...everyTenant, ...perTenant);
  return moved.size;
}

export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

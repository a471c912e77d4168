/**
 * Storage version 3: no list of every tenant's tasks. Each task's create, claim and end wrote it
 * beside its tenant's list; an admin's list now merges the tenants' lists (task-index.ts), whose names
 * are in the set of tenants. Each task of the list of every tenant's joins its tenant's list if it is
 * not there (where its score is this version's to keep), its tenant joins the set, and the list is
 * removed. A process of an earlier version still running writes it again, and the next start does
 * this again (the `EXISTS` looks at it).
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { DEFAULT_TENANT } from '../task-ids.js';

const PAGE = 1_000;

export async function tenantSetForEveryTenantsList(redis: Redis, keys: Keys): Promise<number> {
  const everyTenant = `${keys.prefix}:tasks:index`;
  if ((await redis.exists(everyTenant)) === 0) return 0;
  let moved = 0;
  // Installs of this version had one cell, the install's own prefix (a cell count never changes, cell-count.ts).
  const cell = keys.cells[0]!;
  for (let start = 0; ; start += PAGE) {
    const page = await redis.zrange(everyTenant, start, start + PAGE - 1, 'WITHSCORES');
    const ids = page.filter((_, index) => index % 2 === 0);
    if (!ids.length) break;
    const read = redis.pipeline();
    for (const id of ids) read.hget(keys.task(id), 'tenant');
    const tenants = ((await read.exec()) ?? []).map(([, tenant]) => (tenant as string | null) ?? DEFAULT_TENANT);
    const write = redis.pipeline();
    ids.forEach((id, index) => write.zadd(cell.tenantTasks(tenants[index]!), 'NX', page[2 * index + 1]!, id));
    write.sadd(cell.tenants, ...new Set(tenants));
    await write.exec();
    moved += ids.length;
    if (ids.length < PAGE) break;
  }
  await redis.unlink(everyTenant);
  return moved;
}

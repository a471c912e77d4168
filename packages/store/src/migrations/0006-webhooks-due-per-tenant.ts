/**
 * Storage version 6: a tenant's webhook deliveries are due in a set of its own (claimed in turns between
 * tenants, webhook-deliveries.ts); they were due in one set of every tenant's per cell. Each delivery of
 * that set joins its task's tenant's set with its score (unless there already), its tenant joins the set
 * of tenants with due deliveries, and the old set is removed. A delivery whose task is gone goes to the
 * default tenant's set, where a sender drops it. A process of an earlier version still running writes
 * the old set again, and the next start does this again (the `EXISTS` looks at it).
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { DEFAULT_TENANT } from '../task-ids.js';
import { deliveryTask } from '../webhook-deliveries.js';

const PAGE = 1_000;

export async function webhooksDuePerTenant(redis: Redis, keys: Keys): Promise<number> {
  let moved = 0;
  for (const cell of keys.cells) {
    const everyTenant = `${cell.cellPrefix}:webhooks:due`;
    if ((await redis.exists(everyTenant)) === 0) continue;
    for (let start = 0; ; start += PAGE) {
      const page = await redis.zrange(everyTenant, start, start + PAGE - 1, 'WITHSCORES');
      const ids = page.filter((_, index) => index % 2 === 0);
      if (!ids.length) break;
      const tenants = await Promise.all(
        ids.map(async (id) => {
          const taskId = deliveryTask(id);
          return (taskId && (await redis.hget(keys.task(taskId), 'tenant'))) || DEFAULT_TENANT;
        }),
      );
      const write = redis.pipeline();
      ids.forEach((id, index) => write.zadd(cell.tenantWebhooksDue(tenants[index]!), 'NX', page[2 * index + 1]!, id));
      write.sadd(cell.webhookTenants, ...new Set(tenants));
      await write.exec();
      moved += ids.length;
      if (ids.length < PAGE) break;
    }
    await redis.unlink(everyTenant);
  }
  return moved;
}

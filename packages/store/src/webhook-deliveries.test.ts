/** Claiming due webhook deliveries on a real Redis: in turns between tenants, within each one's room. */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { createKeys, type Keys } from './keys.js';
import { connectRedis } from './redis-connection.js';
import { WebhookDeliveries } from './webhook-deliveries.js';

const prefixes: string[] = [];
let redis: Redis;

beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
});
afterAll(async () => {
  redis.disconnect();
  for (const prefix of prefixes) await deletePrefix(prefix);
});

function fresh(): { keys: Keys; deliveries: WebhookDeliveries } {
  const prefix = freshPrefix('deliveries');
  prefixes.push(prefix);
  const keys = createKeys(prefix);
  return { keys, deliveries: new WebhookDeliveries(redis, keys) };
}

/** `count` deliveries of `tenant` due at `at`, as commit.lua adds them. */
async function due(keys: Keys, tenant: string, count: number, at = Date.now() - 1_000): Promise<string[]> {
  const cell = keys.cells[0]!;
  const ids = Array.from({ length: count }, (_, index) => `msg_${tenant}-task_${index + 1}`);
  for (const id of ids) await redis.zadd(cell.tenantWebhooksDue(tenant), at, id);
  await redis.sadd(cell.webhookTenants, tenant);
  return ids;
}

const tenantsOf = (claimed: Array<{ tenant: string }>) => claimed.map((delivery) => delivery.tenant).sort();

it('takes one due delivery of each tenant in turn, whatever the number each has due', async () => {
  const { keys, deliveries } = fresh();
  await due(keys, 'busy', 500);
  const [quiet] = await due(keys, 'quiet', 1);
  await due(keys, 'other', 2);
  const { claimed } = await deliveries.claimDue({ count: 3, leaseMs: 60_000, roomOf: () => 8 });
  expect(tenantsOf(claimed)).toEqual(['busy', 'other', 'quiet']);
  expect(claimed).toContainEqual({ id: quiet, tenant: 'quiet' });
  // Leased: not claimed again until the lease runs out; the others' turns go on.
  const again = await deliveries.claimDue({ count: 100, leaseMs: 60_000, roomOf: () => 100 });
  expect(tenantsOf(again.claimed)).toEqual([...Array(99).fill('busy'), 'other']);
});

it("leaves a tenant without room out, and says when the others' next one is due", async () => {
  const { keys, deliveries } = fresh();
  await due(keys, 'slow', 20);
  const later = Date.now() + 30_000;
  await due(keys, 'fast', 1, later);
  const { claimed, nextDue } = await deliveries.claimDue({
    count: 10,
    leaseMs: 60_000,
    roomOf: (tenant) => (tenant === 'slow' ? 0 : 8),
  });
  expect(claimed).toEqual([]);
  expect(nextDue).toBe(later);
  // With room for 3 of its own, the slow tenant gets 3.
  const some = await deliveries.claimDue({
    count: 10,
    leaseMs: 60_000,
    roomOf: (tenant) => (tenant === 'slow' ? 3 : 8),
  });
  expect(tenantsOf(some.claimed)).toEqual(['slow', 'slow', 'slow']);
});

it('drops a tenant with nothing due from the set of tenants, and a resend brings it back', async () => {
  const { keys, deliveries } = fresh();
  const cell = keys.cells[0]!;
  await redis.hset(keys.webhooks('t1'), 'msg_t1_4', JSON.stringify({ event: 'task.completed', createdAt: 1 }));
  await redis.zadd(cell.tenantWebhooksDue('acme'), Date.now(), 'msg_t1_4');
  await redis.sadd(cell.webhookTenants, 'acme');
  const [claimed] = (await deliveries.claimDue({ count: 1, leaseMs: 60_000, roomOf: () => 1 })).claimed;
  expect(claimed).toEqual({ id: 'msg_t1_4', tenant: 'acme' });
  await deliveries.update('t1', 'acme', 'msg_t1_4', (current) => ({ ...current, state: 'delivered' }));
  expect(await deliveries.claimDue({ count: 1, leaseMs: 60_000, roomOf: () => 1 })).toEqual({ claimed: [] });
  expect(await redis.smembers(cell.webhookTenants)).toEqual([]);

  await deliveries.resend('t1', 'acme', 'msg_t1_4', 'https://hooks.example.com/');
  expect(await redis.smembers(cell.webhookTenants)).toEqual(['acme']);
  expect((await deliveries.claimDue({ count: 1, leaseMs: 60_000, roomOf: () => 1 })).claimed).toEqual([claimed]);
});

it('refuses a resend while an attempt holds its lease, and loses no attempt to a write between', async () => {
  const { keys, deliveries } = fresh();
  const cell = keys.cells[0]!;
  const stored = { event: 'task.completed', createdAt: 1, attempts: [{ at: 1, error: 'answered 500', ms: 1 }] };
  await redis.hset(keys.webhooks('t2'), 'msg_t2_4', JSON.stringify(stored));
  await redis.zadd(cell.tenantWebhooksDue('acme'), Date.now(), 'msg_t2_4');
  await redis.sadd(cell.webhookTenants, 'acme');
  await deliveries.claimDue({ count: 1, leaseMs: 60_000, roomOf: () => 1 });
  expect(await deliveries.resend('t2', 'acme', 'msg_t2_4', 'https://hooks.example.com/')).toEqual({
    outcome: 'under_way',
  });
  // Another write lands between this attempt's read and its write: it is read again, both are kept.
  let reads = 0;
  const written = await deliveries.update('t2', 'acme', 'msg_t2_4', (current) => {
    if (++reads === 1)
      void redis.hset(
        keys.webhooks('t2'),
        'msg_t2_4',
        JSON.stringify({ ...stored, attempts: [...stored.attempts, { at: 2, error: 'answered 502', ms: 1 }] }),
      );
    return {
      ...current,
      attempts: [...(current.attempts ?? []), { at: 3, statusCode: 200, ms: 1 }],
      state: 'delivered',
    };
  });
  expect(written).toBe('written');
  expect(reads).toBe(2);
  const after = (await deliveries.list('t2', 'https://hooks.example.com/'))[0]!;
  expect(after.attempts.map((attempt) => attempt.at)).toEqual([1, 2, 3].map((at) => new Date(at).toISOString()));
  // The attempt's write ended its lease: a resend goes through.
  expect((await deliveries.resend('t2', 'acme', 'msg_t2_4', 'https://hooks.example.com/')).outcome).toBe('resent');
});

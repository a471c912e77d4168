/** A tenant's task searches counted over every API process, on a real Redis. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { createKeys } from './keys.js';
import { connectRedis } from './redis-connection.js';
import { SEARCH_LEASE_MS, takeSearchLease } from './search-leases.js';

const prefix = freshPrefix('search-leases');
const keys = createKeys(prefix);
let redis: Redis;

beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
});
afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

it("holds at most `most` of a tenant's searches at once, whatever process asks, and frees a turn on release", async () => {
  // Two API processes: two connections.
  const other = redis.duplicate();
  const first = await takeSearchLease({ redis, keys, tenant: 'acme', most: 2 });
  const second = await takeSearchLease({ redis: other, keys, tenant: 'acme', most: 2 });
  expect(first).toBeDefined();
  expect(second).toBeDefined();
  expect(await takeSearchLease({ redis: other, keys, tenant: 'acme', most: 2 })).toBeUndefined();
  // Another tenant's turns are its own.
  expect(await takeSearchLease({ redis, keys, tenant: 'beta', most: 2 })).toBeDefined();
  await first!.release();
  expect(await takeSearchLease({ redis: other, keys, tenant: 'acme', most: 2 })).toBeDefined();
  other.disconnect();
});

it('drops the lease of a process that died once its time is over', async () => {
  const leases = keys.searchLeases('gamma');
  // Two leases a dead process left, ended a moment ago (as SEARCH_LEASE_MS after it took them).
  await redis.zadd(leases, Date.now() - 1_000, 'dead-1', Date.now() - 1_000, 'dead-2');
  expect(await takeSearchLease({ redis, keys, tenant: 'gamma', most: 2 })).toBeDefined();
  expect(await redis.zrange(leases, 0, -1)).toHaveLength(1);
  expect(await redis.pttl(leases)).toBeGreaterThan(SEARCH_LEASE_MS - 5_000);
});

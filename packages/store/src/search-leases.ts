/**
 * A tenant's task searches in flight over every API process: each search holds a lease in Redis while it
 * runs (take-search-lease.lua), so a tenant that spreads its searches over several API processes still
 * runs only so many at once. A lease its process never let go (the process died) ends by itself.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { luaScript } from './lua-script.js';

/** How long a lease lasts when its process never lets it go: far past a search page's few seconds. */
export const SEARCH_LEASE_MS = 60_000;

const TAKE_SEARCH_LEASE = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'take-search-lease',
  keys: ['leasesKey'],
  args: ['id', 'most', 'leaseMs'],
});

/**
 * A lease for one search of `tenant` when fewer than `most` are held, with its `release`; `undefined`
 * when `most` are. Example: `const lease = await takeSearchLease({ redis, keys, tenant: 'acme', most: 2 })`.
 */
export async function takeSearchLease(options: {
  redis: Redis;
  keys: Keys;
  tenant: string;
  most: number;
}): Promise<{ release(): Promise<void> } | undefined> {
  const { redis, keys, tenant, most } = options;
  const id = randomUUID();
  const leasesKey = keys.searchLeases(tenant);
  const taken = await TAKE_SEARCH_LEASE.run(redis, {
    keys: { leasesKey },
    args: { id, most, leaseMs: SEARCH_LEASE_MS },
  });
  if (taken !== 1) return undefined;
  return {
    release: async () => {
      await redis.zrem(leasesKey, id);
    },
  };
}

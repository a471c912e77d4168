/** The storage version: migrations run once, in order, the version is kept, and newer data is refused. */
import {
  connectRedis,
  createKeys,
  migrateStorage,
  STORAGE_VERSION,
  StorageTooNewError,
  storageVersion,
} from '@agentq/store';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';

let redis: Redis;
const prefixes: string[] = [];
const lines: string[] = [];
const logger = {
  info: (_: object, line: string) => lines.push(line),
  warn: (_: object, line: string) => lines.push(line),
};

beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
});
afterAll(async () => {
  redis.disconnect();
  for (const prefix of prefixes) await deletePrefix(prefix);
});

function fresh() {
  const prefix = freshPrefix('storage');
  prefixes.push(prefix);
  return createKeys(prefix);
}

describe('the storage version', () => {
  it('brings data written before versions were kept up to this version, and keeps the number', async () => {
    const keys = fresh();
    // An earlier version's lists: one of every status, scored by order.
    await redis.hset(keys.task('t1'), { id: 't1', status: 'completed', order: '1', tenant: 'acme' });
    await redis.zadd(`${keys.prefix}:tasks`, 1, 't1');
    expect(await storageVersion(redis, keys)).toBe(0);
    await migrateStorage(redis, keys, logger);
    expect(await storageVersion(redis, keys)).toBe(STORAGE_VERSION);
    expect(await redis.exists(`${keys.prefix}:tasks`)).toBe(0);
    expect(await redis.zcard(keys.allTasks)).toBe(1);
    expect(lines.some((line) => line.includes('storage migrated to version 1'))).toBe(true);
  });

  it('runs nothing for data at this version', async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, String(STORAGE_VERSION));
    // Left by a process of an earlier version after the migration ran: not looked for again.
    await redis.zadd(`${keys.prefix}:tasks`, 1, 't1');
    await migrateStorage(redis, keys, logger);
    expect(await redis.exists(`${keys.prefix}:tasks`)).toBe(1);
  });

  it('refuses data a newer agentq wrote, saying what to do', async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, String(STORAGE_VERSION + 1));
    const start = migrateStorage(redis, keys, logger);
    await expect(start).rejects.toBeInstanceOf(StorageTooNewError);
    await expect(start).rejects.toThrow(/storage version 2.*AGENTQ_REDIS_PREFIX/);
    expect(await storageVersion(redis, keys)).toBe(STORAGE_VERSION + 1);
  });
});

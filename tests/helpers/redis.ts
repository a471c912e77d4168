/** A fresh key prefix per test on the run's Redis, and clean-up of everything under it. */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { inject } from 'vitest';

export function redisUrl(): string {
  return inject('redisUrl');
}

export function freshPrefix(label = 't'): string {
  return `agentq-test-${label}-${randomBytes(4).toString('hex')}`;
}

export async function deletePrefix(prefix: string): Promise<void> {
  const redis = new Redis(redisUrl());
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

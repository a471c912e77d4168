/** A connection ioredis ended by itself is connected again; one this process closed stays closed. */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisUrl } from '../../../tests/helpers/redis.js';
import { keepConnecting, redisReady } from './redis-connection.js';

/** What a Sentinel's failover announcement does to a reconnect under way: its connector is called off. */
function callOffConnect(redis: Redis): void {
  (redis as unknown as { connector: { disconnect(): void } }).connector.disconnect();
}

const ended = (redis: Redis) => new Promise<void>((resolve) => redis.once('end', () => resolve()));

/** Connects, has the connect called off, and waits until ioredis has ended the connection. */
async function connectCalledOff(redis: Redis): Promise<void> {
  const end = ended(redis);
  const connecting = redis.connect().catch((error: Error) => error);
  callOffConnect(redis);
  expect(((await connecting) as Error).message).toBe('Connection is closed.');
  await end;
}

describe('keepConnecting', () => {
  it('connects again a connection whose connect was called off (ioredis ends it for good)', async () => {
    const plain = new Redis(redisUrl(), { lazyConnect: true });
    plain.on('error', () => undefined);
    const kept = keepConnecting(new Redis(redisUrl(), { lazyConnect: true }), 10);
    kept.on('error', () => undefined);
    try {
      for (const redis of [plain, kept]) await connectCalledOff(redis);
      // ioredis leaves it ended; kept, it is back.
      expect(await redisReady(kept, 5_000)).toBe(true);
      expect(await kept.ping()).toBe('PONG');
      expect(plain.status).toBe('end');
    } finally {
      plain.disconnect();
      kept.disconnect();
    }
  });

  it("keeps its duplicates too (BullMQ's blocking connections are duplicates of the one it is given)", async () => {
    const kept = keepConnecting(new Redis(redisUrl(), { lazyConnect: true }), 10);
    const copy = kept.duplicate({ lazyConnect: true, connectionName: 'blocking' });
    copy.on('error', () => undefined);
    try {
      await connectCalledOff(copy);
      expect(await redisReady(copy, 5_000)).toBe(true);
      expect(await copy.client('GETNAME')).toBe('blocking');
    } finally {
      copy.disconnect();
      kept.disconnect();
    }
  });

  it('leaves closed a connection this process quit or disconnected', async () => {
    for (const close of [(redis: Redis) => void redis.quit(), (redis: Redis) => redis.disconnect()]) {
      const redis = keepConnecting(new Redis(redisUrl()), 10);
      redis.on('error', () => undefined);
      expect(await redisReady(redis, 5_000)).toBe(true);
      const end = ended(redis);
      close(redis);
      await end;
      // Well past its retry delay (10 ms), it has not connected again.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(redis.status).toBe('end');
    }
  });
});

/** Whether a Redis answers at a URL, asked once without retries: `ok`, `auth` (it wants other credentials), or `down`. */
import { redisEvictionWarning } from '@agentq/queue';
import { Redis } from 'ioredis';

export type RedisProbe = 'ok' | 'auth' | 'down';

export async function probeRedis(url: string, timeoutMs = 1_000): Promise<RedisProbe> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG' ? 'ok' : 'down';
  } catch (error) {
    return /NOAUTH|WRONGPASS|invalid (username-)?password|AUTH/i.test((error as Error).message) ? 'auth' : 'down';
  } finally {
    client.disconnect();
  }
}

/** Why the Redis at a URL may delete agentq's keys by itself (it evicts them past its maxmemory); undefined when it does not, or cannot be asked. */
export async function probeRedisEviction(url: string, timeoutMs = 1_000): Promise<string | undefined> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await redisEvictionWarning(client);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

export async function redisAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  return (await probeRedis(url, timeoutMs)) === 'ok';
}

/** Whether a Redis answers at a URL, asked once without retries: `ok`, `auth` (it wants other credentials), or `down`. */
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

export async function redisAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  return (await probeRedis(url, timeoutMs)) === 'ok';
}

/** Whether a Redis answers at a URL, asked once without retries: `ok`, `auth` (it wants other credentials), or `down`. */
import { evictionWarning, readRedisMemory } from '@agentq/store';
import { Redis } from 'ioredis';

export type RedisProbe = 'ok' | 'auth' | 'down';

/**
 * A client that asks once, without retries. No ready check: its INFO, refused with NOAUTH, would close
 * the connection and answer "Connection is closed", which read as a Redis that does not answer.
 */
function askOnce(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
  });
}

export async function probeRedis(url: string, timeoutMs = 1_000): Promise<RedisProbe> {
  const client = askOnce(url, timeoutMs);
  let failure: unknown;
  client.on('error', (error) => (failure ??= error));
  try {
    await client.connect();
    return (await client.ping()) === 'PONG' ? 'ok' : 'down';
  } catch (error) {
    return wantsPassword(error) || wantsPassword(failure) || /\bAUTH\b/.test((error as Error).message)
      ? 'auth'
      : 'down';
  } finally {
    client.disconnect();
  }
}

/**
 * What the Redis at a URL does once full, and on a restart: `evicts` says why it may delete agentq's keys
 * by itself (it evicts them past its maxmemory); `unbounded`, that it has no maxmemory (it grows until
 * the machine runs out, and agentq cannot refuse new tasks before); `unlogged`, that it does not log its
 * writes to disk (`appendonly no`: a restart loses what it wrote since its last snapshot, if any).
 * Nothing when it cannot be asked.
 */
export async function probeRedisMemory(
  url: string,
  timeoutMs = 1_000,
): Promise<{ evicts?: string; unbounded?: boolean; unlogged?: boolean }> {
  const client = askOnce(url, timeoutMs);
  // A probe only: `connect` below fails with the reason, and nothing is said when Redis cannot be asked.
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [memory, persistence] = await Promise.all([readRedisMemory(client), client.info('persistence')]);
    const evicts = evictionWarning(memory);
    return {
      ...(evicts ? { evicts } : {}),
      ...(memory.max === 0 ? { unbounded: true } : {}),
      ...(/^aof_enabled:0/m.test(persistence) ? { unlogged: true } : {}),
    };
  } catch {
    return {};
  } finally {
    client.disconnect();
  }
}

export async function redisAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  return (await probeRedis(url, timeoutMs)) === 'ok';
}

/** Whether an error is Redis asking for (other) credentials. */
export function wantsPassword(error: unknown): boolean {
  return /NOAUTH|WRONGPASS|invalid (username-)?password/i.test((error as Error | undefined)?.message ?? '');
}

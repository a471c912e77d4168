/**
 * Redis connections. Workers' (BullMQ's blocking ones) wait out an outage: no per-command retry limit,
 * commands queued until Redis is back. The API's data connection fails fast instead: a request while
 * Redis is away is answered 503 at once, not held until a client gives up.
 */
import { Redis } from 'ioredis';

export function connectRedis(options: { url: string; name?: string; failFast?: boolean }): Redis {
  return new Redis(options.url, {
    ...(options.failFast ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5_000 } : { maxRetriesPerRequest: null }),
    ...(options.name ? { connectionName: options.name } : {}),
  });
}

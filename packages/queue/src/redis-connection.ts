/** Redis connections as BullMQ wants them (no per-command retry limit on blocking connections). */
import { Redis } from 'ioredis';

export function connectRedis(options: { url: string; name?: string }): Redis {
  return new Redis(options.url, { maxRetriesPerRequest: null, ...(options.name ? { connectionName: options.name } : {}) });
}

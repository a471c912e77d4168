/**
 * Which worker processes are online: each one refreshes a short-lived key with what it serves, so a
 * process that dies drops out of the list within the heartbeat's lifetime.
 */
import type { Redis } from 'ioredis';
import type { PoolIsolation } from '@agentq/contract';
import type { Keys } from './keys.js';

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  pools: string[];
  /** Jobs at once, per pool. */
  concurrency: Record<string, number>;
  /** Per pool: how its process tools are isolated. */
  isolation?: Record<string, PoolIsolation>;
  startedAt: string;
  lastSeen: string;
}

/** How long a heartbeat lasts; workers refresh it three times as often. */
export const HEARTBEAT_TTL_MS = 15_000;

export async function sendHeartbeat(options: {
  redis: Redis;
  keys: Keys;
  worker: Omit<WorkerInfo, 'lastSeen'>;
}): Promise<void> {
  const info: WorkerInfo = { ...options.worker, lastSeen: new Date().toISOString() };
  await options.redis
    .multi()
    .set(options.keys.worker(info.id), JSON.stringify(info), 'PX', HEARTBEAT_TTL_MS)
    .sadd(options.keys.workers, info.id)
    .exec();
}

export async function removeHeartbeat(options: { redis: Redis; keys: Keys; id: string }): Promise<void> {
  await options.redis.multi().del(options.keys.worker(options.id)).srem(options.keys.workers, options.id).exec();
}

export async function onlineWorkers(options: { redis: Redis; keys: Keys }): Promise<WorkerInfo[]> {
  const ids = await options.redis.smembers(options.keys.workers);
  if (ids.length === 0) return [];
  const values = await options.redis.mget(...ids.map((id) => options.keys.worker(id)));
  const gone = ids.filter((_, index) => values[index] === null);
  if (gone.length) await options.redis.srem(options.keys.workers, ...gone);
  return values.filter((value): value is string => value !== null).map((value) => JSON.parse(value) as WorkerInfo);
}

/** The shared memory of a planned task's subtasks: one Redis hash per root task. */
import type { Redis } from 'ioredis';
import type { Scratchpad } from '@agentq/tools';

export function createRedisScratchpad(options: { redis: Redis; key: string }): Scratchpad {
  const { redis, key } = options;
  return {
    async set(name, value) {
      await redis.hset(key, name, value);
    },
    async get(name) {
      return (await redis.hget(key, name)) ?? undefined;
    },
    async list() {
      const all = await redis.hgetall(key);
      return Object.entries(all)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, value]) => ({ key: name, value }));
    },
  };
}

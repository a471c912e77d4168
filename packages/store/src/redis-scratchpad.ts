/** The shared memory of a planned task's subtasks: one Redis hash per root task. */
import type { Redis } from 'ioredis';
import { MAX_NOTES, type Scratchpad } from '@agentq/tools';
import { luaScript } from './lua-script.js';

const SET_NOTE = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'set-note',
  keys: ['notesKey'],
  args: ['name', 'value', 'most'],
});

export function createRedisScratchpad(options: { redis: Redis; key: string }): Scratchpad {
  const { redis, key } = options;
  return {
    async set(name, value) {
      return (await SET_NOTE.run(redis, { keys: { notesKey: key }, args: { name, value, most: MAX_NOTES } })) === 1;
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

/** The shared memory of a planned task's subtasks: one Redis hash per root task. */
import type { Redis } from 'ioredis';
import { MAX_NOTES, type Scratchpad } from '@agentq/tools';

/** KEYS = [the hash]; ARGV = [name, value, most notes]: sets the note unless it is new and the hash is full (answers 0). */
const SET_NOTE = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

interface NoteCommands {
  agentqSetNote(key: string, name: string, value: string, most: number): Promise<number>;
}

export function createRedisScratchpad(options: { redis: Redis; key: string }): Scratchpad {
  const { redis, key } = options;
  if (!(redis as unknown as Partial<NoteCommands>).agentqSetNote)
    redis.defineCommand('agentqSetNote', { numberOfKeys: 1, lua: SET_NOTE });
  return {
    async set(name, value) {
      return (await (redis as unknown as NoteCommands).agentqSetNote(key, name, value, MAX_NOTES)) === 1;
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

/**
 * Work shared by every worker process without a leader (the sweep of expired tasks, the compaction of
 * ended tasks' events): a sorted set of ids by when each is due. A batch of due ids is claimed in one
 * Lua call that moves them to a lease (so no other worker takes them) and is removed from the set
 * once done. A worker that dies mid-batch leaves its lease to run out: the batch is due again.
 */
import type { Redis } from 'ioredis';
import { luaScript } from './lua-script.js';

const CLAIM = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'claim-due',
  keys: ['dueKey'],
  args: ['now', 'count', 'leaseUntil'],
});

export async function claimDue(
  redis: Redis,
  key: string,
  options: { now: number; count: number; leaseMs: number },
): Promise<string[]> {
  return (await CLAIM.run(redis, {
    keys: { dueKey: key },
    args: { now: options.now, count: options.count, leaseUntil: Date.now() + options.leaseMs },
  })) as string[];
}

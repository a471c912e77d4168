/**
 * Work shared by every worker process without a leader (the sweep of expired tasks, the compaction of
 * ended tasks' events): a sorted set of ids by when each is due. A batch of due ids is claimed in one
 * Lua call that moves them to a lease (so no other worker takes them) and is removed from the set
 * once done. A worker that dies mid-batch leaves its lease to run out: the batch is due again.
 */
import type { Redis } from 'ioredis';
import { CALL_MANY } from './lua-call-many.js';

/** Takes up to ARGV[2] ids due at ARGV[1] out of the others' reach until ARGV[3] (a ZADD per 500 of them). */
const CLAIM_SCRIPT = `${CALL_MANY}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local leases = {}
for _, id in ipairs(due) do
  leases[#leases + 1] = ARGV[3]
  leases[#leases + 1] = id
end
callMany('ZADD', KEYS[1], leases)
return due
`;

export async function claimDue(
  redis: Redis,
  key: string,
  options: { now: number; count: number; leaseMs: number },
): Promise<string[]> {
  return (await redis.eval(
    CLAIM_SCRIPT,
    1,
    key,
    String(options.now),
    String(options.count),
    String(Date.now() + options.leaseMs),
  )) as string[];
}

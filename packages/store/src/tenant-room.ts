/**
 * A tenant's room: how many of its submitted tasks may be unfinished (AGENTQ_TENANT_MAX_UNFINISHED) and
 * stored (AGENTQ_TENANT_MAX_TASKS), and how many bytes its tasks may have written to Redis
 * (AGENTQ_TENANT_MAX_MB, tenant-bytes.ts), so that one tenant cannot fill the Redis every tenant shares.
 * The room is checked in the CREATE call that stores the tasks, so requests sent at the same moment
 * cannot pass a limit together (read before the call, ten parallel requests with room for four all passed).
 *
 * A submit too big for one call (CREATE_BATCH) checks room for all its tasks in its first call, which
 * holds the room its later calls need (tasks and bytes): the tenant's other submits count it as taken.
 * Each later call takes its share of the hold; a submit whose first call was refused has no hold, so its
 * later calls store nothing either. A hold lasts HOLD_MS at most (a process that died between its calls).
 */
import { AgentqError } from '@agentq/contract';

/** What a tenant may have: tasks not ended yet, and tasks kept (ended ones too). */
export interface RoomLimits {
  unfinished: number;
  stored: number;
  /** What its stored tasks may have written to Redis, in bytes (tenant-bytes.ts); default no limit. */
  bytes?: number;
}

/** One submit's claim on its tenant's room, over its calls: its id, all its tasks, and whether this is its first call. */
export interface RoomClaim {
  id: string;
  tasks: number;
  /** What all its tasks write when they are created (tenant-bytes.ts, createdBytes); read with a byte limit only. */
  bytes: number;
  first: boolean;
}

/** A tenant's limits that new tasks must fit in, and (a submit over several calls) which part this is. */
export interface Room {
  limits: RoomLimits;
  claim?: RoomClaim;
}

/** The tenant has no room for a submit: nothing of it was stored. Counts include what other submits hold. */
export class NoRoomError extends AgentqError {
  readonly code = 'no_room';
  /** Room comes back as the tenant's tasks end or pass their retention. */
  readonly retryable = true;
  constructor(
    readonly tenant: string,
    readonly requested: number,
    readonly unfinished: number,
    readonly stored: number,
    readonly limits: RoomLimits,
    /** What its stored tasks wrote, in bytes, and what the new ones would (with a byte limit). */
    readonly bytes?: { used: number; requested: number },
  ) {
    super(
      `Tenant ${tenant} has no room for ${requested} more tasks (${unfinished} unfinished of ${limits.unfinished}, ${stored} stored of ${limits.stored}` +
        `${bytes && limits.bytes !== undefined ? `, ${bytes.used} bytes of ${limits.bytes} written, ${bytes.requested} more asked` : ''})`,
    );
  }

  /** Which limit it would pass: unfinished tasks first, then stored tasks, then bytes. */
  get limit(): 'unfinished' | 'stored' | 'bytes' {
    if (this.unfinished + this.requested > this.limits.unfinished) return 'unfinished';
    return this.stored + this.requested > this.limits.stored || !this.bytes ? 'stored' : 'bytes';
  }
}

/** How long a submit's later calls may take after its first (they are sent together: milliseconds). */
export const HOLD_MS = 60_000;

/**
 * Lua: `takeRoom(r, count, bytes)` for a call storing `count` of a submit's tasks, which write `bytes`.
 * `r` = {list, held, expiry, heldBytes, counter (KEYS indexes of the tenant's list, its hold sets and
 * its byte counter), id, tasks, bytes (all the submit's), first, unfinished, stored, maxBytes (the
 * limits; maxBytes may be absent)}. Answers true, or false with the counts that left no room (unfinished,
 * stored, bytes written and held); a later call whose hold is gone answers false alone. Needs CALL_MANY
 * and the index's UNFINISHED_MAX_SCORE.
 */
export const TAKE_ROOM = (unfinishedMaxScore: number) => `
local function takeRoom(r, count, bytes)
  local list, held, expiry, heldBytes = KEYS[r.list], KEYS[r.held], KEYS[r.expiry], KEYS[r.heldBytes]
  if not r.first then
    local left = tonumber(redis.call('ZSCORE', held, r.id) or '0')
    if left < count then return false end
    if left == count then
      redis.call('ZREM', held, r.id)
      redis.call('ZREM', expiry, r.id)
      if r.maxBytes then redis.call('ZREM', heldBytes, r.id) end
    else
      redis.call('ZINCRBY', held, -count, r.id)
      if r.maxBytes then redis.call('ZINCRBY', heldBytes, -bytes, r.id) end
    end
    return true
  end
  local function now()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local holding, holdingBytes = 0, 0
  if redis.call('EXISTS', held) == 1 then
    local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now())
    if #gone > 0 then
      callMany('ZREM', held, gone)
      callMany('ZREM', expiry, gone)
      callMany('ZREM', heldBytes, gone)
    end
    local holds = redis.call('ZRANGE', held, 0, -1, 'WITHSCORES')
    for i = 2, #holds, 2 do holding = holding + tonumber(holds[i]) end
    if r.maxBytes then
      holds = redis.call('ZRANGE', heldBytes, 0, -1, 'WITHSCORES')
      for i = 2, #holds, 2 do holdingBytes = holdingBytes + tonumber(holds[i]) end
    end
  end
  local unfinished = redis.call('ZCOUNT', list, 0, ${unfinishedMaxScore}) + holding
  local stored = redis.call('ZCARD', list) + holding
  local written = r.maxBytes and tonumber(redis.call('GET', KEYS[r.counter]) or '0') + holdingBytes or 0
  if unfinished + r.tasks > r.unfinished or stored + r.tasks > r.stored or (r.maxBytes and written + r.bytes > r.maxBytes) then
    return false, unfinished, stored, written
  end
  if r.tasks > count then
    redis.call('ZADD', held, r.tasks - count, r.id)
    redis.call('ZADD', expiry, string.format('%d', now() + ${HOLD_MS}), r.id)
    redis.call('PEXPIRE', held, ${HOLD_MS})
    redis.call('PEXPIRE', expiry, ${HOLD_MS})
    if r.maxBytes then
      redis.call('ZADD', heldBytes, string.format('%d', r.bytes - bytes), r.id)
      redis.call('PEXPIRE', heldBytes, ${HOLD_MS})
    end
  end
  return true
end
`;

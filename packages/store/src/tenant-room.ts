/**
 * A tenant's room: how many of its submitted tasks may be unfinished (limits.unfinished) and
 * stored (limits.stored), and how many bytes its tasks may have written to Redis
 * (limits.mb, tenant-bytes.ts), so that one tenant cannot fill the Redis every tenant shares.
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

/**
 * Room for `count` more of `tenant`'s tasks that write `bytes`, given what counts against it now
 * (`usage`), or NoRoomError.
 */
export function assertRoom(
  tenant: string,
  count: number,
  bytes: number,
  usage: { unfinished: number; stored: number; writtenBytes: number },
  limits: RoomLimits,
): void {
  const { unfinished, stored, writtenBytes: used } = usage;
  if (
    unfinished + count > limits.unfinished ||
    stored + count > limits.stored ||
    (limits.bytes !== undefined && used + bytes > limits.bytes)
  ) {
    throw new NoRoomError(
      tenant,
      count,
      unfinished,
      stored,
      limits,
      limits.bytes !== undefined ? { used, requested: bytes } : undefined,
    );
  }
}

/** How long a submit's later calls may take after its first (they are sent together: milliseconds). */
export const HOLD_MS = 60_000;

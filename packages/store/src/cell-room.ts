/**
 * A tenant's room (tenant-room.ts) when its tasks are spread over several cells: no one script sees
 * all of a tenant's tasks, so a submit holds its room at the install's home first (hold-room.lua: the
 * other submits' holds are answered), then reads its tenant's counts in every cell, checks them with
 * every hold, creates its tasks, and lets its hold go. Two submits at once stay within the limits: the
 * later one to hold counts the earlier one's hold, and a submit that holds after another let its hold
 * go reads that one's tasks in the cells (they were created before it let go). What is counted twice
 * for a moment (a hold, and its tasks already created) only refuses early, never lets a limit pass.
 */
import { execPipeline } from './pipeline-replies.js';
import { cellPipeline } from './cell-pipeline.js';
import { luaScript } from './lua-script.js';
import { readRoomCounts, roomCounts } from './room-counts.js';
import { assertRoom, HOLD_MS, type RoomLimits } from './tenant-room.js';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { randomUUID } from 'node:crypto';

const HOLD_ROOM = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'hold-room',
  keys: ['holdsKey'],
  args: ['id', 'count', 'size', 'holdMs'],
});

/** A submit's hold on its tenant's room; `release` once its tasks are created (or were not). */
export interface HeldRoom {
  release(): Promise<void>;
}

/**
 * Holds room for `tasks` new tasks of `tenant` that write `bytes`, across every cell; throws NoRoomError
 * (holding nothing) when they do not fit in `limits`.
 */
export async function holdRoom(
  { redis, keys }: { redis: Redis; keys: Keys },
  tenant: string,
  tasks: number,
  bytes: number,
  limits: RoomLimits,
): Promise<HeldRoom> {
  const id = randomUUID();
  const holdsKey = keys.tenantRoomHolds(tenant);
  const release = async () => {
    await redis.hdel(holdsKey, id);
  };
  const [heldTasks, heldBytes] = (await HOLD_ROOM.run(redis, {
    keys: { holdsKey },
    args: { id, count: tasks, size: bytes, holdMs: HOLD_MS },
  })) as [number, number];
  try {
    const read = cellPipeline(redis);
    readRoomCounts(read, keys, tenant);
    const usage = roomCounts(await execPipeline(read), keys);
    // The other submits' holds count as taken.
    assertRoom(
      tenant,
      tasks,
      bytes,
      {
        unfinished: usage.unfinished + Number(heldTasks),
        stored: usage.stored + Number(heldTasks),
        writtenBytes: usage.writtenBytes + Number(heldBytes),
      },
      limits,
    );
  } catch (error) {
    // The refusal is what the caller hears; a hold that cannot be released ends with its TTL.
    await release().catch(() => undefined);
    throw error;
  }
  return { release };
}

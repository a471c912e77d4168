/**
 * What counts against a tenant's room (tenant-room.ts), in every cell: its tasks not ended and stored
 * (its lists), and the bytes they wrote (its counters). Read in a pipeline the caller sends (with its
 * other reads), then added up.
 */
import type { ChainableCommander } from 'ioredis';
import type { Keys } from './keys.js';
import { UNFINISHED_MAX_SCORE } from './task-index.js';

/** What counts against a tenant's room: its tasks not ended, all it stores, and the bytes they wrote. */
export interface RoomUsage {
  unfinished: number;
  stored: number;
  writtenBytes: number;
}

/** Adds the reads of `tenant`'s room to `pipeline`: three a cell, in front of whatever follows. */
export function readRoomCounts(pipeline: ChainableCommander, keys: Keys, tenant: string): void {
  for (const cell of keys.cells) {
    const list = cell.tenantTasks(tenant);
    pipeline.zcount(list, 0, UNFINISHED_MAX_SCORE).zcard(list).get(cell.tenantBytes(tenant));
  }
}

/** The room's counts from the pipeline's replies (`readRoomCounts`'s, first), added up over the cells. */
export function roomCounts(replies: readonly unknown[], keys: Keys): RoomUsage {
  const usage: RoomUsage = { unfinished: 0, stored: 0, writtenBytes: 0 };
  for (let cell = 0; cell < keys.cells.length; cell++) {
    usage.unfinished += Number(replies[3 * cell] ?? 0);
    usage.stored += Number(replies[3 * cell + 1] ?? 0);
    usage.writtenBytes += Number(replies[3 * cell + 2] ?? 0);
  }
  return usage;
}

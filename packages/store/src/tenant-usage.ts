/**
 * A tenant's usage against its limits, read in one round trip: its tasks not ended and stored
 * (limits.unfinished, limits.stored), the bytes they wrote (limits.mb) and,
 * with a daily limit (limits.tokensPerDay/usdPerDay), what it spent today. `GET /v1/usage` shows it, so that a
 * tenant sees how close it is before a submit is refused; the bulk retry's room check reads its counts.
 *
 * Read, not held: a submit's room is taken in the script that stores it (tenant-room.ts), so what this
 * reads may be out of date by the submits under way (a submit of several calls holds room for a minute).
 */
import type { UsageLimit, UsageView } from '@agentq/contract';
import { execPipeline } from './pipeline-replies.js';
import { readRoomCounts, roomCounts, type RoomUsage } from './room-counts.js';
import type { TaskStore } from './task-store.js';
import { addSpending, dailyLimitOf, dayEnd, spendingKeys, spentPast, type DaySpending } from './tenant-spending.js';
import { cellPipeline } from './cell-pipeline.js';
import type { RoomLimits } from './tenant-room.js';

/** `tenant`'s usage of its room and, with a daily limit, of its day (one round trip). */
async function readUsage(
  store: TaskStore,
  tenant: string,
  now: Date,
): Promise<{ room: RoomUsage; today?: DaySpending }> {
  // Its counts in every cell, added up, and its day's spending in every cell.
  const read = cellPipeline(store.redis);
  readRoomCounts(read, store.keys, tenant);
  const daily = dailyLimitOf(store, tenant);
  for (const key of daily ? spendingKeys(store, tenant, now) : []) read.hmget(key, 'tokens', 'microUsd');
  const replies = await execPipeline(read);
  const spent = replies.slice(3 * store.keys.cells.length) as Array<Array<string | null>>;
  return { room: roomCounts(replies, store.keys), ...(daily ? { today: addSpending(spent) } : {}) };
}

/** What counts against `tenant`'s room now. */
export async function readRoomUsage(store: TaskStore, tenant: string): Promise<RoomUsage> {
  return (await readUsage(store, tenant, new Date())).room;
}

/** `tenant`'s usage against `limits` and its daily limit, as `GET /v1/usage` answers it. */
export async function tenantUsage(
  store: TaskStore,
  tenant: string,
  limits: RoomLimits,
  now = new Date(),
): Promise<UsageView> {
  const { room, today } = await readUsage(store, tenant, now);
  const daily = dailyLimitOf(store, tenant);
  const reached: UsageLimit[] = [];
  if (room.unfinished >= limits.unfinished) reached.push('unfinished');
  if (room.stored >= limits.stored) reached.push('stored');
  if (limits.bytes !== undefined && room.writtenBytes >= limits.bytes) reached.push('writtenBytes');
  if (daily && today && spentPast(today, daily)) reached.push('daily');
  return {
    tenant,
    tasks: { unfinished: room.unfinished, stored: room.stored },
    writtenBytes: room.writtenBytes,
    today: today
      ? { tokens: today.tokens, usd: today.microUsd / 1_000_000, resetsAt: dayEnd(now).toISOString() }
      : null,
    limits: {
      unfinished: limits.unfinished,
      stored: limits.stored,
      writtenBytes: limits.bytes ?? null,
      daily: daily
        ? { tokens: daily.tokens ?? null, usd: daily.microUsd !== undefined ? daily.microUsd / 1_000_000 : null }
        : null,
    },
    reached,
  };
}

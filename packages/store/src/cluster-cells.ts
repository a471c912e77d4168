/**
 * Cells on a Redis Cluster's masters. A cell's keys share one hash tag, so one master carries each cell,
 * and an install spreads over the masters only with enough cells at the right slots (keys.ts puts cell i
 * of n in the i-th n-th of the 16,384). An install on a cluster that AGENTQ_CELLS leaves unset takes the
 * count it recorded at its first start; a new one records the fewest cells that give every master the
 * same number of them (as many as masters on a cluster whose masters hold even ranges, as
 * `redis-cli --cluster create` makes them). Once recorded the count is fixed (cell-count.ts): the tasks'
 * keys are in their cells.
 */
import type { Redis } from 'ioredis';
import { cellPrefix, createKeys, keySlot } from './keys.js';

/** Each master of a cluster (by node id) and the slot ranges it serves, as CLUSTER SLOTS says. */
export type SlotOwners = ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>;

/** At most this many cells a master, looking for a count that spreads evenly: each cell costs (docs/operations.md). */
const MOST_CELLS_A_MASTER = 8;

type SlotsReply = Array<[number, number, [string, number, string?, ...unknown[]], ...unknown[]]>;

/** Who serves which slots: CLUSTER SLOTS, read from any node. */
export async function clusterSlotOwners(redis: Redis): Promise<SlotOwners> {
  const owners = new Map<string, Array<[number, number]>>();
  for (const [from, to, [host, port, id]] of (await redis.call('CLUSTER', 'SLOTS')) as SlotsReply) {
    const master = id ?? `${host}:${port}`;
    owners.set(master, [...(owners.get(master) ?? []), [from, to]]);
  }
  return owners;
}

/** How many of an install's cells each master holds, in the order of `owners`. */
export function cellsPerMaster(prefix: string, cells: number, owners: SlotOwners): number[] {
  const slots = Array.from({ length: cells }, (_, cell) => keySlot(cellPrefix(prefix, cell, cells)));
  return [...owners.values()].map(
    (ranges) => slots.filter((slot) => ranges.some(([from, to]) => slot >= from && slot <= to)).length,
  );
}

/**
 * The fewest cells, a multiple of the masters' count, that give every master as many of them; where no
 * multiple up to MOST_CELLS_A_MASTER does (slots split very unevenly), the fewest that leave no master
 * without one; else as many as masters.
 */
export function spreadingCellCount(prefix: string, owners: SlotOwners): number {
  const masters = Math.max(1, owners.size);
  const candidates = Array.from(
    { length: Math.min(MOST_CELLS_A_MASTER, Math.floor(1024 / masters)) },
    (_, index) => (index + 1) * masters,
  );
  const held = candidates.map((cells) => ({ cells, each: cellsPerMaster(prefix, cells, owners) }));
  return (
    held.find(({ each }) => new Set(each).size === 1)?.cells ??
    held.find(({ each }) => !each.includes(0))?.cells ??
    masters
  );
}

/**
 * The cell count of an install on a Redis Cluster that AGENTQ_CELLS leaves unset: the one it recorded at
 * its first start (1 for an install from before counts were kept: it has a storage version and no
 * count); for a new install, the spreading count, recorded now. Of processes that start together the
 * first to record wins, and every other takes its count.
 */
export async function recordedCellCount(
  redis: Redis,
  prefix: string,
): Promise<{ cells: number; recordedNow: boolean }> {
  const home = createKeys(prefix);
  const [recorded, version] = await redis.mget(home.cellCount, home.storageVersion);
  if (recorded !== null) return { cells: Number(recorded), recordedNow: false };
  if (version !== null) return { cells: 1, recordedNow: false };
  const spread = spreadingCellCount(prefix, await clusterSlotOwners(redis));
  if ((await redis.set(home.cellCount, String(spread), 'NX')) !== null) return { cells: spread, recordedNow: true };
  return { cells: Number(await redis.get(home.cellCount)), recordedNow: false };
}

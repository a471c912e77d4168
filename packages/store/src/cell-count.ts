/**
 * An install's cell count (AGENTQ_CELLS) is fixed when it first starts: a task's keys are in the cell
 * its id names, so with another count every stored task would be looked for in the wrong place. The
 * first process to start records the count (`<prefix>:cells`); a process with another is refused.
 */
import { AgentqError } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';

export class CellCountChangedError extends AgentqError {
  readonly code = 'cell_count_changed';
  readonly retryable = false;
  constructor(
    readonly found: number,
    readonly asked: number,
    prefix: string,
  ) {
    super(
      `The data under prefix ${prefix} is in ${found} cell${found === 1 ? '' : 's'}, and this process was started with AGENTQ_CELLS=${asked}: a cell count cannot change once tasks are stored (their keys are in their cells). Start it with AGENTQ_CELLS=${found}, or give a new install a prefix of its own (AGENTQ_REDIS_PREFIX); docs/operations.md, "Moving an install", says how to move tasks.`,
    );
  }
}

/** Records the install's cell count at its first start; throws CellCountChangedError when it differs. */
export async function checkCellCount(redis: Redis, keys: Keys): Promise<void> {
  const asked = keys.cells.length;
  // An install from before cell counts were kept (it has a storage version) had one cell. Both read in
  // one command: another process's first start records the count, then the version, and two reads
  // could see its version without its count (a process that started with it was refused, once).
  const [recorded, version] = await redis.mget(keys.cellCount, keys.storageVersion);
  let found = recorded !== null ? Number(recorded) : version !== null ? 1 : undefined;
  if (found === undefined) {
    await redis.set(keys.cellCount, String(asked), 'NX');
    found = Number(await redis.get(keys.cellCount));
  } else if (recorded === null && found === asked) await redis.set(keys.cellCount, String(asked), 'NX');
  if (found !== asked) throw new CellCountChangedError(found, asked, keys.prefix);
}

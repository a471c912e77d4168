/**
 * The storage version: what layout the data under a prefix has, as a number in Redis
 * (`<prefix>:storage-version`), and the migrations that bring it up to this code's, one file each in
 * this folder, run in order at each process's start. A migration is idempotent (processes start
 * together, and one may die halfway): it reads what is there and moves what is left. Data written by a
 * newer agentq than this one is refused, not misread.
 */
import { AgentqError } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { luaScript } from '../lua-script.js';
import { CellCountChangedError, checkCellCount } from '../cell-count.js';
import { moveTaskLists } from './0001-task-lists-by-status-score.js';
import { mergeEventStreams } from './0002-event-streams-into-lists.js';
import { tenantSetForEveryTenantsList } from './0003-tenant-set-for-every-tenants-list.js';
import { openPackedEvents } from './0004-open-packed-events.js';
import { countAndPageSchedules } from './0005-schedules-counted-and-paged.js';
import { webhooksDuePerTenant } from './0006-webhooks-due-per-tenant.js';

const SET_IF_HIGHER = luaScript({
  dir: new URL('../../scripts/', import.meta.url),
  name: 'set-if-higher',
  keys: ['versionKey'],
  args: ['version'],
});

interface Migration {
  version: number;
  /** What it changes, for the log. */
  name: string;
  /** Answers how many things it moved. */
  run(redis: Redis, keys: Keys): Promise<number>;
}

/** In version order; the last one's version is this code's. */
const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'task lists by status score', run: moveTaskLists },
  {
    version: 2,
    name: "a task's events in its list only (an earlier version's streams merged in)",
    run: mergeEventStreams,
  },
  {
    version: 3,
    name: "no list of every tenant's tasks: an admin's list merges the tenants' lists",
    run: tenantSetForEveryTenantsList,
  },
  { version: 4, name: "a task's packed events left open, for more parts to follow", run: openPackedEvents },
  {
    version: 5,
    name: "schedules counted toward their tenant's bytes and paged, their files apart",
    run: countAndPageSchedules,
  },
  { version: 6, name: "a tenant's webhook deliveries due in a set of its own", run: webhooksDuePerTenant },
];

/** The storage version this code reads and writes. */
export const STORAGE_VERSION = MIGRATIONS.at(-1)!.version;

/** The data is at a storage version this code does not know: a newer agentq wrote it. */
export class StorageTooNewError extends AgentqError {
  readonly code = 'storage_too_new';
  readonly retryable = false;
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `The data in Redis is at storage version ${found}, and this agentq knows versions up to ${known}: a newer agentq wrote it. Run that version (or newer) against this Redis, or give this one a prefix of its own (AGENTQ_REDIS_PREFIX).`,
    );
  }
}

/** Reads the data's storage version (0: written before versions were kept, or nothing written yet). */
export async function storageVersion(redis: Redis, keys: Keys): Promise<number> {
  return Number((await redis.get(keys.storageVersion)) ?? 0);
}

/**
 * Brings the data up to STORAGE_VERSION (said in the log), or throws StorageTooNewError. Redis away:
 * a warning, and the next start tries again.
 */
export async function migrateStorage(
  redis: Redis,
  keys: Keys,
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void },
): Promise<void> {
  let found: number;
  try {
    // Before anything is read or moved: the tasks must be looked for in the cells they were stored in.
    await checkCellCount(redis, keys);
    found = await storageVersion(redis, keys);
  } catch (error) {
    // A Redis that refuses the credentials is not away: the start fails, saying how to give them.
    if (error instanceof CellCountChangedError || /NOAUTH|WRONGPASS/.test((error as Error).message)) throw error;
    logger.warn({ err: error }, 'could not read the storage version; the next start migrates what is left');
    return;
  }
  if (found > STORAGE_VERSION) throw new StorageTooNewError(found, STORAGE_VERSION);
  for (const migration of MIGRATIONS) {
    if (migration.version <= found) continue;
    try {
      const moved = await migration.run(redis, keys);
      // Never lowered: a process that started later and finished first may have set a higher one.
      await SET_IF_HIGHER.run(redis, {
        keys: { versionKey: keys.storageVersion },
        args: { version: migration.version },
      });
      if (moved > 0)
        logger.info(
          { version: migration.version, moved },
          `storage migrated to version ${migration.version}: ${migration.name}`,
        );
    } catch (error) {
      logger.warn(
        { err: error, version: migration.version },
        'a storage migration did not finish; the next start goes on with it',
      );
      return;
    }
  }
}

/**
 * Schedules as Redis keeps them, in the schedules' cell (keys.ts): a record (its timing, its task as
 * submitted but with its files named, not held; its tenant; whether it is paused, and why), the files
 * its task is given (a hash of path to content, read only when it fires), its last runs, and the lists
 * of a tenant's schedules and of every tenant's, by `order`, a page at a time. What fires them is
 * BullMQ's job scheduler of the same id (the task service's schedules); this is what they are and did.
 *
 * A schedule holds its task for as long as it lives, so it is held to its tenant's limits as a task is:
 * its bytes (tenant-bytes.ts, scheduleBytes) count in its tenant's byte counter, taken in the script
 * that saves it if they fit in its room (limits.mb; with several cells, held at the home first, as a
 * submit does: cell-room.ts) and given back by the one that removes it; and a tenant holds at most so
 * many (limits.schedules), checked in the same script.
 */
import { AgentqError, type ScheduleRunView } from '@agentq/contract';
import type { Redis } from 'ioredis';
import { holdRoom, type HeldRoom } from './cell-room.js';
import type { Keys } from './keys.js';
import { luaScript } from './lua-script.js';
import { execPipeline } from './pipeline-replies.js';
import { UNFINISHED_MAX_SCORE } from './task-index.js';
import { SCHEDULE_KEPT_RUNS, SCHEDULE_RUN_BYTES } from './tenant-bytes.js';
import { HOLD_MS, NoRoomError, type RoomLimits } from './tenant-room.js';

const dir = new URL('../scripts/', import.meta.url);
const SAVE_KEYS = [
  'scheduleKey',
  'filesKey',
  'tenantSchedulesKey',
  'everyScheduleKey',
  'orderKey',
  'bytesKey',
] as const;
/** The tenant's room, for takeRoom (one cell, a byte limit). */
const SAVE_ROOM_KEYS = ['tenantTasksKey', 'roomHeldKey', 'roomUntilKey', 'roomHeldBytesKey'] as const;
const SAVE = luaScript({
  dir,
  name: 'save-schedule',
  keys: SAVE_KEYS,
  lateKeys: SAVE_ROOM_KEYS,
  args: ['payloadJson'],
  constants: { UNFINISHED_MAX_SCORE, HOLD_MS },
});
/** Where takeRoom finds each of its keys in KEYS (1-based). */
const keyIndex = (name: (typeof SAVE_KEYS)[number] | (typeof SAVE_ROOM_KEYS)[number]) =>
  [...SAVE_KEYS, ...SAVE_ROOM_KEYS].indexOf(name) + 1;
const REMOVE = luaScript({
  dir,
  name: 'remove-schedule',
  keys: ['scheduleKey', 'filesKey', 'runsKey', 'tenantSchedulesKey', 'everyScheduleKey', 'bytesKey'],
  args: ['id'],
});
const RECORD_RUN = luaScript({
  dir,
  name: 'record-schedule-run',
  keys: ['scheduleKey', 'runsKey'],
  args: ['runJson', 'keptRuns', 'taskId', 'pausedReason'],
});

export interface StoredSchedule {
  id: string;
  tenant: string;
  cron?: string;
  timezone?: string;
  every?: number;
  overlap: 'skip' | 'allow';
  paused: boolean;
  /** Why agentq paused it (its tenant left the configuration file); absent when a client did. */
  pausedReason?: string;
  /** The task each run submits, as its client wrote it, but its `files` as `[{path, size}]` (JSON). */
  task: string;
  createdAt: string;
  /** The task of its last run, for `overlap: skip`. */
  lastTaskId?: string;
  /** Its place in the lists: a later schedule's is higher. */
  order: number;
  /** What it holds in Redis, counted toward its tenant's limits.mb (tenant-bytes.ts, scheduleBytes). */
  bytes: number;
}

/** A schedule as written: its order is the store's (its last run's task too, unless a migration brings it). */
export type ScheduleRecord = Omit<StoredSchedule, 'order'>;

/** A file a schedule's task is given, as stored. */
export interface ScheduleFile {
  path: string;
  content: Buffer;
}

/** A tenant holds limits.schedules schedules, or a schedule's bytes would pass limits.mb: nothing was saved. */
export class ScheduleLimitError extends AgentqError {
  readonly code = 'schedule_limit';
  /** Room comes back as its schedules, or its tasks, are deleted. */
  readonly retryable = true;
  constructor(
    readonly tenant: string,
    readonly limit:
      | { kind: 'schedules'; count: number; max: number }
      | { kind: 'bytes'; used: number; requested: number; max: number },
  ) {
    super(
      limit.kind === 'schedules'
        ? `Tenant ${tenant} holds ${limit.count} schedules, its limit of ${limit.max}: nothing was scheduled`
        : `Tenant ${tenant}'s tasks and schedules wrote ${limit.used} bytes of its ${limit.max}; a schedule of ${limit.requested} more bytes does not fit: nothing was scheduled`,
    );
  }
}

/** A page of a list of schedules, newest first; `nextCursor` (null on the last) asks for the next. */
export interface SchedulePage {
  schedules: StoredSchedule[];
  nextCursor: string | null;
}

export class ScheduleStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /**
   * Writes a schedule whole: a new one (`create`, up to `maxSchedules` of its tenant) or a change of one
   * (`update`; undefined when it was deleted meanwhile), or one of an earlier storage version
   * (`migrate`: given its order and counted, unless it was already). With `files`, its task's files are
   * replaced. What it adds to its bytes must fit in `limits` (its tenant's room), else ScheduleLimitError.
   */
  async save(
    schedule: ScheduleRecord,
    options: {
      mode: 'create' | 'update' | 'migrate';
      files?: readonly ScheduleFile[] | undefined;
      /** How many schedules its tenant may hold (create). */
      maxSchedules?: number;
      limits?: RoomLimits | undefined;
      /** What it held before (update): only what it adds needs room. */
      previousBytes?: number;
    },
  ): Promise<StoredSchedule | undefined> {
    const { tenant } = schedule;
    const cell = this.keys.cells[0]!;
    const added = schedule.bytes - (options.previousBytes ?? 0);
    const maxBytes = options.limits?.bytes;
    const checked = maxBytes !== undefined && added > 0;
    // With several cells no script sees all the tenant's bytes: its room is held at the home first.
    let held: HeldRoom | undefined;
    if (checked && this.keys.cells.length > 1) {
      try {
        held = await holdRoom({ redis: this.redis, keys: this.keys }, tenant, 0, added, bytesOnly(options.limits!));
      } catch (error) {
        if (!(error instanceof NoRoomError)) throw error;
        throw new ScheduleLimitError(tenant, {
          kind: 'bytes',
          used: error.bytes?.used ?? 0,
          requested: added,
          max: maxBytes,
        });
      }
    }
    const inRoom = checked && !held;
    // (an order a caller read is the stored one's: the script keeps that)
    const { id, bytes, order: _order, ...rest } = schedule as StoredSchedule;
    const fields = Object.fromEntries(
      Object.entries(rest)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => [name, String(value)]),
    );
    const payload = {
      mode: options.mode,
      id,
      bytes,
      fields: { id, ...fields },
      files: options.files !== undefined,
      ...(options.maxSchedules !== undefined ? { maxSchedules: options.maxSchedules } : {}),
      ...(inRoom
        ? {
            room: {
              list: keyIndex('tenantTasksKey'),
              held: keyIndex('roomHeldKey'),
              expiry: keyIndex('roomUntilKey'),
              heldBytes: keyIndex('roomHeldBytesKey'),
              counter: keyIndex('bytesKey'),
              id: 'schedule',
              tasks: 0,
              first: true,
              // A schedule is no task: only its bytes are held to the room (the script sets them).
              unfinished: Number.MAX_SAFE_INTEGER,
              stored: Number.MAX_SAFE_INTEGER,
              maxBytes,
            },
          }
        : {}),
    };
    let reply: [string, string | number | undefined];
    try {
      reply = (await SAVE.run(this.redis, {
        keys: {
          scheduleKey: this.keys.schedule(id),
          filesKey: this.keys.scheduleFiles(id),
          tenantSchedulesKey: this.keys.tenantSchedules(tenant),
          everyScheduleKey: this.keys.everySchedule,
          orderKey: this.keys.scheduleOrder,
          bytesKey: cell.tenantBytes(tenant),
        },
        ...(inRoom
          ? {
              lateKeys: {
                tenantTasksKey: cell.tenantTasks(tenant),
                roomHeldKey: cell.tenantRoomHeld(tenant),
                roomUntilKey: cell.tenantRoomUntil(tenant),
                roomHeldBytesKey: cell.tenantRoomHeldBytes(tenant),
              },
            }
          : {}),
        args: { payloadJson: JSON.stringify(payload) },
        restArgs: (options.files ?? []).flatMap((file) => [file.path, file.content]),
      })) as [string, string | number | undefined];
    } finally {
      // The write's outcome is what the caller hears; a hold that cannot be released ends with its TTL.
      await held?.release().catch(() => undefined);
    }
    const [outcome, value] = reply;
    if (outcome === 'too_many')
      throw new ScheduleLimitError(tenant, { kind: 'schedules', count: Number(value), max: options.maxSchedules! });
    if (outcome === 'no_room')
      throw new ScheduleLimitError(tenant, { kind: 'bytes', used: Number(value), requested: added, max: maxBytes! });
    if (outcome === 'gone') return undefined;
    return { ...schedule, order: Number(value) };
  }

  async get(id: string): Promise<StoredSchedule | undefined> {
    return parseSchedule(await this.redis.hgetall(this.keys.schedule(id)));
  }

  /** The files its task is given, by path. */
  async files(id: string): Promise<ScheduleFile[]> {
    const hash = await this.redis.hgetallBuffer(this.keys.scheduleFiles(id));
    return Object.entries(hash)
      .map(([path, content]) => ({ path, content }))
      .sort((a, b) => a.path.localeCompare(b.path));
  }

  /** A page of a tenant's schedules (or, without `tenant`, of every tenant's), newest first. */
  async page(options: {
    tenant?: string | undefined;
    limit: number;
    cursor?: string | undefined;
  }): Promise<SchedulePage> {
    const list = options.tenant !== undefined ? this.keys.tenantSchedules(options.tenant) : this.keys.everySchedule;
    const entries = await this.redis.zrevrangebyscore(
      list,
      options.cursor !== undefined ? `(${options.cursor}` : '+inf',
      '-inf',
      'WITHSCORES',
      'LIMIT',
      0,
      options.limit + 1,
    );
    const ids = entries.filter((_, index) => index % 2 === 0).slice(0, options.limit);
    const read = this.redis.pipeline();
    for (const id of ids) read.hgetall(this.keys.schedule(id));
    const hashes = (await execPipeline(read)) as Array<Record<string, string>>;
    const schedules = hashes.flatMap((hash) => parseSchedule(hash) ?? []);
    const more = entries.length > 2 * options.limit;
    return { schedules, nextCursor: more ? entries[2 * options.limit - 1]! : null };
  }

  /** Its last runs, newest first. */
  async runs(id: string): Promise<ScheduleRunView[]> {
    return (await this.redis.lrange(this.keys.scheduleRuns(id), 0, SCHEDULE_KEPT_RUNS - 1)).map(
      (text) => JSON.parse(text) as ScheduleRunView,
    );
  }

  /**
   * A run: the task it submitted (kept as the last one) or why it submitted none, and, with
   * `pausedReason`, the schedule paused for that reason. Nothing when the schedule is gone.
   */
  async recordRun(id: string, run: ScheduleRunView, pausedReason?: string): Promise<void> {
    await RECORD_RUN.run(this.redis, {
      keys: { scheduleKey: this.keys.schedule(id), runsKey: this.keys.scheduleRuns(id) },
      args: {
        runJson: runJson(run),
        keptRuns: SCHEDULE_KEPT_RUNS,
        taskId: run.taskId ?? '',
        pausedReason: pausedReason ?? '',
      },
    });
  }

  /** Removes it, its files and runs, and gives its bytes back to its tenant; false when it was gone. */
  async remove(schedule: Pick<StoredSchedule, 'id' | 'tenant'>): Promise<boolean> {
    const { id, tenant } = schedule;
    const removed = await REMOVE.run(this.redis, {
      keys: {
        scheduleKey: this.keys.schedule(id),
        filesKey: this.keys.scheduleFiles(id),
        runsKey: this.keys.scheduleRuns(id),
        tenantSchedulesKey: this.keys.tenantSchedules(tenant),
        everyScheduleKey: this.keys.everySchedule,
        bytesKey: this.keys.cells[0]!.tenantBytes(tenant),
      },
      args: { id },
    });
    return removed === 1;
  }
}

/** A tenant's room as a schedule takes it: a schedule is no task, so only its bytes are held to it. */
function bytesOnly(limits: RoomLimits): RoomLimits {
  return { ...limits, unfinished: Number.MAX_SAFE_INTEGER, stored: Number.MAX_SAFE_INTEGER };
}

/** A run as stored: its reason (an error's message) cut so that it stays within what its schedule counts. */
function runJson(run: ScheduleRunView): string {
  const reason = run.skipped ?? '';
  for (let kept = reason.length; ; kept = Math.floor(kept * 0.8)) {
    const json = JSON.stringify({
      ...run,
      skipped: run.skipped && kept < reason.length ? `${reason.slice(0, kept)}…` : run.skipped,
    });
    if (Buffer.byteLength(json) <= SCHEDULE_RUN_BYTES || kept === 0) return json;
  }
}

/** A schedule's record as read, or undefined (none, or one a migration has not reached). */
export function parseSchedule(hash: Record<string, string>): StoredSchedule | undefined {
  if (!hash.id || hash.order === undefined) return undefined;
  return {
    id: hash.id,
    tenant: hash.tenant!,
    ...(hash.cron ? { cron: hash.cron } : {}),
    ...(hash.timezone ? { timezone: hash.timezone } : {}),
    ...(hash.every ? { every: Number(hash.every) } : {}),
    overlap: hash.overlap === 'allow' ? 'allow' : 'skip',
    paused: hash.paused === 'true',
    ...(hash.pausedReason ? { pausedReason: hash.pausedReason } : {}),
    task: hash.task ?? '{}',
    createdAt: hash.createdAt ?? '',
    ...(hash.lastTaskId ? { lastTaskId: hash.lastTaskId } : {}),
    order: Number(hash.order),
    bytes: Number(hash.bytes ?? 0),
  };
}

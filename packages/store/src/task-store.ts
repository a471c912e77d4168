/**
 * Task records in Redis: create (in bulk), read (parsed), list (newest first, paged, by status), and
 * write, always through the scripts of commit-script.ts. Which changes a task may go through is the
 * transitions module's business; this is the storage under it. Messages and events hang off each
 * task's own keys.
 */
import { cellPipeline } from './cell-pipeline.js';
import { execPipeline } from './pipeline-replies.js';
import {
  AgentqError,
  TERMINAL_STATUSES,
  type EventInput,
  type TaskEvent,
  type TaskStatus,
  type TaskListView,
  type TaskSummaryView,
  type TaskView,
} from '@agentq/contract';
import { randomUUID } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import type { MemoryEntry, TokenUsage } from '@agentq/protocol';
import { COMMIT, COMMIT_KEYS, CREATE } from './commit-script.js';
import { luaScript } from './lua-script.js';
import { countByStatus, newestInIndex, statusBand } from './task-index.js';
import type { CellKeys, Keys } from './keys.js';
import { holdRoom, type HeldRoom } from './cell-room.js';
import { TenantTotals, type OtherCells } from './tenant-totals.js';
import { HOLD_MS, NoRoomError, type Room, type RoomLimits } from './tenant-room.js';
import { eventPages } from './event-pages.js';
import { readEvents, storedOpen, type StoredEvent } from './task-events.js';
import { searchPrompts, SEARCH_PAGE_BYTES } from './prompt-search.js';
import { takeSearchLease } from './search-leases.js';
import { CREATED_FIELDS, createdBytes, createdBytesOfSizes, inputFilesBytes } from './tenant-bytes.js';
import { eventLine, eventLineHead, eventLineRoot, RunEvents } from './run-events.js';
import { isCluster } from './pub-sub.js';
import { readFinishedJobs, type FinishedSeries } from './finished-jobs.js';
import { IdempotencyMismatchError, KeysChangedError, RoomHoldLostError } from './store-errors.js';
import { idempotencyValue, parseIdempotencyValue } from './idempotency-keys.js';
import { parseTaskRecord, recordHash, SUMMARY_RECORD_FIELDS, taskView, type TaskRecord } from './task-record.js';

/** The fields of a task a list row shows, its prompt and result cut in Redis (list). */
const READ_LIST_ROW = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'read-list-row',
  keys: ['taskKey'],
  args: ['previewBytes'],
});
/** A task's record with its result cut in Redis (getCut). */
const READ_CUT = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'read-task-cut',
  keys: ['taskKey'],
  args: ['headBytes', 'tailBytes'],
});
import { DEFAULT_TENANT, rootOf } from './task-ids.js';

/** An event a commit adds: the contract's input, with who wrote it, and another task's id when it is mirrored. */
/** `at`: when it happened, for an event held back and written later (default: when it is written). */
export type StoredEventInput = EventInput & { agent?: string; worker?: string; taskId?: string; at?: string };

export interface CommitOptions {
  taskId: string;
  /** Change the status to this. */
  status?: TaskStatus;
  /** Commit only when the current status is one of these; otherwise nothing is written. */
  expect?: readonly TaskStatus[];
  /**
   * Commit only when the task's last event is still this one (its `seq`): nothing else changed it since
   * the caller read it. Otherwise nothing is written, and the outcome is 'wrong_status'.
   */
  expectSeq?: number;
  /** Commit only while this run token is the task's: the worker that wrote it still holds the task. */
  runToken?: string;
  /**
   * The task's tenant: the keys the commit may touch (its lists, its byte count, its spending) are
   * its, declared to Redis with the call; a commit for another tenant than the task's is refused.
   */
  tenant: string;
  fields?: Record<string, string>;
  /** Fields written only when the task has none of that name yet (`commitAndRead` only). */
  firstTime?: Record<string, string>;
  usage?: TokenUsage;
  steps?: number;
  messages?: readonly MemoryEntry[];
  events?: readonly StoredEventInput[];
  /**
   * The caller adds the task's job right after this commit: the task is leased in its pool's fair
   * leases (`key`, FairAdmission.leaseOf) for `ms` by the same commit, so that a caller that dies in
   * between leaves it to a worker's `recover`, which adds its job (the record's `jobId`).
   */
  lease?: { key: string; ms: number };
  /**
   * A claim by a task's job (`commitAndRead` only): applied only if that job is the task's current one
   * (its record's `jobId`, else the task's id). A job a crashed worker left after its run requeued the
   * task as its next job (due-tasks.ts) claims nothing.
   */
  expectJob?: string;
  /**
   * The task's run must wait `ms` (from Redis's time now): the same commit puts it, as `member`, in its
   * pool's due set (`key`, FairAdmission.dueOf), from which admission takes it back when due, to run as
   * job `jobId` (kept in `runsKey`; due-tasks.ts).
   */
  due?: { key: string; runsKey: string; ms: number; member: string; jobId: string };
  /**
   * A run's claim (`commitAndRead`), with the run's token: its events are held from now on, to be
   * packed by its end commit in place of a later compaction (run-events.ts).
   */
  holdEventsFor?: string;
}

/** What a tenant may spend per UTC day (cost in micro-USD), by tenant name or `*` for any other. */
export type TenantLimits = Record<string, { tokens?: number; microUsd?: number }>;

/** Why a run should stop at its next step, though nobody cancelled it. */
export type SpendingStop = 'budget' | 'tenant_limit' | 'tenant_bytes';

/** What a commit did: `applied`, or why nothing was written. */
export type CommitOutcome = 'applied' | 'missing' | 'wrong_status' | 'stale_token';

export interface CommitResult {
  outcome: CommitOutcome;
  /** `outcome === 'applied'`. */
  applied: boolean;
  /** The status after the commit (before it, when nothing was written); undefined for a missing task. */
  status: TaskStatus | undefined;
  cancelRequested: boolean;
  /** Its root's budget, or its tenant's daily limit, is spent (read by every applied commit of a task that has one). */
  stop: SpendingStop | undefined;
  /** The last event's number. */
  seq: number;
}

/** A commit that also read the task (`commitAndRead`): its record before the commit, and its memory. */
export interface ReadCommitResult extends CommitResult {
  record?: TaskRecord;
  memory?: MemoryEntry[];
}

/** A leased task as `recover` reads it: its tenant and job id, and whether it still waits to run. */
export interface LeasedTask {
  tenant: string;
  /** The job a resumed task runs as; default the task's id. */
  jobId?: string;
  queued: boolean;
}

/** A new task's record: its fields, the first event, and whether it is in the lists (a submitted task). */
export interface NewTask {
  fields: Record<string, string> & { id: string; rootId: string; status: TaskStatus };
  /** Submitted tasks are listed (by tenant and status, and batch if any); subtasks are reached through their root. */
  listed?: { tenant: string; batch?: string };
  event?: StoredEventInput;
  /** An idempotency key of the tenant: when it names a live task, nothing is created. */
  idempotencyKey?: string;
  /**
   * The digest of the body that makes it (request-digest.ts in the tasks package), kept with its key: a
   * key that names a live task made from another body refuses the call (IdempotencyMismatchError).
   */
  idempotencyDigest?: string;
  /**
   * A listed task ready to run: it joins its tenant's list for `pool` (fair-admission.ts) in the same
   * call that stores it, so a process that dies right after leaves no task that nothing will run.
   */
  waiting?: { pool: string; priority: number };
  /**
   * A listed task that names a concurrency key (`Keys.concurrencyBase`): it waits in the key's queue
   * instead of its tenant's list, until the key's gate lets it through (concurrency-gate.ts).
   */
  gated?: { base: string };
  /** Files for its folder (task-schemas.ts, files): stored with it, placed by its first run. */
  inputs?: ReadonlyArray<{ path: string; content: Buffer }>;
  /** Made at most once: when its id exists already, nothing is written and that task is answered. */
  once?: true;
}

export interface ListTasksOptions {
  status?: TaskStatus;
  limit: number;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
  /** Only tasks whose prompt contains this text (any case). */
  q?: string;
  /** Only this tenant's tasks. Default: every tenant's. */
  tenant?: string;
  /** Only the tasks of this batch of `tenant` (the status filter then reads each task). */
  batch?: string;
  /** Each task without its result, which is then not read from Redis. Default false. */
  summary?: boolean;
}

/** How much of a task's prompt (and result) a list row carries: its first bytes, cut at a character. */
export const LIST_PREVIEW_BYTES = 1024;
/** The most a page of a list holds, as JSON: past it, the page ends early with a cursor to the rest. */
export const LIST_PAGE_BYTES = 4 * 1024 * 1024;
/** A list row's fields: a summary's, and the result too without `summary`. */
const LIST_ROW_FIELDS = SUMMARY_RECORD_FIELDS;
const LIST_ROW_FIELDS_WITH_RESULT = [...SUMMARY_RECORD_FIELDS, 'result'];

/** How many tasks a filtered list reads at most per page before it answers with what it found. */
const SEARCH_SCAN_LIMIT = 5_000;

/**
 * How many new tasks one CREATE call stores: a call holds Redis for its whole run, every worker's
 * commands waiting behind it (200 take about 7 ms here, 500 took about 15; a POST is no slower).
 */
export const CREATE_BATCH = 200;

type CommitReply = [CommitOutcome, number, string, string, null?, null?, (number | null)?];
/** A commit that read (`commitAndRead`), its bulk strings as they came: its record is one (commit.lua). */
type ReadCommitReply = [
  Buffer,
  number,
  Buffer,
  Buffer,
  (Buffer | Buffer[] | null)?,
  (Buffer[] | null)?,
  (number | null)?,
  (number | null)?,
];
/**
 * Per task `[outcome, id, status]`, or one `['no_room', unfinished, stored, bytes written]` for the whole
 * call, or one `['reread']`: an idempotency key changed since it was read; or, nothing written, a
 * `['mismatch', new task's id, the task its key names]` per key that names a live task of another body.
 */
type CreateReply = Array<
  | ['created' | 'existing', string, string]
  | ['no_room', number, number, number]
  | ['reread']
  | ['mismatch', string, string]
>;

/**
 * A commit that no replica confirmed in time (AGENTQ_COMMIT_REPLICAS): it may stand on the primary, and
 * a failover could lose it. The run does not go on from it; its job is tried again once replicas answer,
 * without using an attempt (a replica that is away is Redis's trouble, not the task's).
 */
export class CommitNotReplicated extends AgentqError {
  readonly code = 'not_replicated';
  readonly retryable = true;
  constructor(taskId: string, replicas: number, timeoutMs: number) {
    super(
      `The commit of task ${taskId} was not confirmed by ${replicas} Redis replica${replicas === 1 ? '' : 's'} within ${timeoutMs} ms (AGENTQ_COMMIT_REPLICAS)`,
    );
  }
}

/** What an applied commit wrote, for a process's logs and metrics (`TaskStore.observe`). */
export interface AppliedCommit {
  taskId: string;
  events: readonly StoredEventInput[];
  /** It added a webhook delivery (commit.lua): a sender may look now. */
  delivery: boolean;
}

/** What a store holds tasks to; every one has a default. */
export interface StoreOptions {
  /** How long a submitted task's data is kept after it ends (AGENTQ_RETENTION_HOURS). Default 7 days. */
  retentionMs?: number;
  /**
   * What each tenant may spend per day (limits.tokensPerDay/usdPerDay): its spending is counted, and its runs
   * stop once it is reached. Default: no limits, nothing counted.
   */
  tenantLimits?: TenantLimits | undefined;
  /**
   * Each commit is answered only once this many replicas hold it (Redis `WAIT`, AGENTQ_COMMIT_REPLICAS):
   * a run never builds on a step a failover could lose. Past `timeoutMs` without them, the commit throws
   * (it may stand on the primary; the run is tried again from what Redis holds). Default: not waited for.
   */
  durability?: { replicas: number; timeoutMs: number } | undefined;
  /** By tenant (or `*`, the rest): what its tasks may have written to Redis, in bytes (limits.mb): past it, its runs stop (tenant-bytes.ts). */
  tenantMaxBytes?: Readonly<Record<string, number>> | undefined;
}

export class TaskStore {
  /** Told of every applied commit this process makes (its logs and metrics); must not throw. */
  private observer: ((commit: AppliedCommit) => void) | undefined;
  /** Told of every write of this process refused because another run holds the task (a late write). */
  private staleListener: ((taskId: string) => void) | undefined;

  readonly retentionMs: number;
  readonly tenantLimits: TenantLimits | undefined;
  readonly durability: { replicas: number; timeoutMs: number } | undefined;
  readonly tenantMaxBytes: Readonly<Record<string, number>> | undefined;
  /** On a Redis Cluster, events are published sharded (pub-sub.ts). */
  private readonly sharded: boolean;

  constructor(
    readonly redis: Redis,
    readonly keys: Keys,
    options: StoreOptions = {},
  ) {
    this.retentionMs = options.retentionMs ?? 7 * 24 * 3600 * 1000;
    this.tenantLimits = options.tenantLimits;
    this.durability = options.durability;
    this.tenantMaxBytes = options.tenantMaxBytes;
    this.sharded = isCluster(redis);
    this.totals = keys.cells.length > 1 ? new TenantTotals(redis, keys) : undefined;
  }

  /** With several cells: what each tenant holds in every cell, for the limits a commit checks. */
  private readonly totals: TenantTotals | undefined;

  /** The events of the runs this process holds, packed by their end commits (run-events.ts). */
  readonly runEvents = new RunEvents();

  /**
   * Stores new tasks, a script call per batch of them; answers `created`, or `existing` with the task an
   * idempotency key named. With `room`, the listed tasks (all of one tenant) are stored only if they fit
   * in their tenant's limits, checked in the calls that store them (tenant-room.ts), else nothing is and
   * it throws NoRoomError; `room.claim` says which part of a submit split over several calls this is.
   */
  async create(
    tasks: readonly NewTask[],
    room?: Room,
    /**
     * Called once every CREATE call of these tasks is on its way to Redis (before any answer): what the
     * caller sends then runs after them (a turn of fair admission that admits what they list).
     */
    onSent?: () => void,
  ): Promise<Array<{ id: string; outcome: 'created' | 'existing'; status: TaskStatus }>> {
    const ts = new Date().toISOString();
    const calls: Array<Promise<CreateReply>> = [];
    const replies: CreateReply[] = [];
    const listed = tasks.filter((task) => task.listed);
    // What takes room: listed tasks, and the bytes of children made once (they count toward no list).
    const roomed = tasks.filter((task) => task.listed || task.once);
    const tenant = roomed[0] && tenantOf(roomed[0]);
    if (room && roomed.some((task) => tenantOf(task) !== tenant))
      throw new Error('tasks of one tenant only are created against its room');
    const bytes = room?.limits.bytes !== undefined ? roomed.reduce((total, task) => total + newTaskBytes(task), 0) : 0;
    const claim = room && (room.claim ?? { id: randomUUID(), tasks: listed.length, bytes, first: true });
    // Each cell's tasks in calls of their own (a call's keys are one cell's), in the order given.
    // (and where each task is in `tasks`, for the answers to come back in its order)
    const byCell = new Map<CellKeys, NewTask[]>();
    const positions = new Map<CellKeys, number[]>();
    for (const [position, task] of tasks.entries()) {
      const cell = this.keys.cellOf(task.fields.id);
      if (!byCell.has(cell)) {
        byCell.set(cell, []);
        positions.set(cell, []);
      }
      byCell.get(cell)!.push(task);
      positions.get(cell)!.push(position);
    }
    // Each call's tasks: where each is in `tasks`.
    const order: number[][] = [];
    // With several cells, the listed tasks' orders from the install's counter (one call): lists and pages
    // merge across cells by them. One cell's CREATE takes them from its own (the same key).
    const orders = new Map<NewTask, number>();
    if (this.keys.cells.length > 1 && listed.length) {
      let next = (await this.redis.incrby(this.keys.homeOrderCounter, listed.length)) - listed.length;
      for (const task of listed) orders.set(task, ++next);
    }
    let unsent = [...byCell.values()].reduce((total, list) => total + Math.ceil(list.length / CREATE_BATCH), 0);
    const sent = () => {
      if (--unsent === 0) onSent?.();
    };
    // With several cells, the room is held at the install's home for the whole submit first (cell-room.ts).
    const held =
      room && this.keys.cells.length > 1 && tenant !== undefined
        ? await holdRoom(this, tenant, listed.length, bytes, room.limits)
        : undefined;
    try {
      for (const [cell, list] of byCell) {
        for (let start = 0; start < list.length; start += CREATE_BATCH) {
          const batch = list.slice(start, start + CREATE_BATCH);
          const batchRoom = !held &&
            room &&
            claim && { limits: room.limits, claim: { ...claim, first: claim.first && start === 0 } };
          calls.push(this.createBatch(cell, batch, ts, batchRoom || undefined, sent, orders));
          order.push(positions.get(cell)!.slice(start, start + CREATE_BATCH));
        }
      }
      if (tasks.length === 0) onSent?.();
      replies.push(...(await Promise.all(calls)));
    } finally {
      await held?.release();
    }
    const mismatches = replies.flat().filter((reply) => reply[0] === 'mismatch') as Array<['mismatch', string, string]>;
    if (mismatches.length) {
      // What other calls stored meanwhile (a key another request stored between its caller's check and
      // these calls): the caller fails it.
      const created = replies.flatMap((reply, call) =>
        reply.flatMap(([outcome, id], at) => (outcome === 'created' ? [{ index: order[call]![at]!, id }] : [])),
      );
      throw new IdempotencyMismatchError(
        mismatches.map(([, id, taskId]) => {
          const index = tasks.findIndex((task) => task.fields.id === id);
          return { index, idempotencyKey: tasks[index]!.idempotencyKey!, taskId };
        }),
        created,
      );
    }
    const refusal = replies.find((reply) => reply[0]?.[0] === 'no_room')?.[0] as
      ['no_room', number, number, number] | undefined;
    if (refusal) {
      const [unfinished, stored, written] = [Number(refusal[1]), Number(refusal[2]), Number(refusal[3])];
      // A later call with no hold left: its submit's first call was refused, or it came past HOLD_MS.
      if (unfinished < 0)
        throw new RoomHoldLostError(
          `Submit ${claim!.id} held no room for these tasks: its first tasks were refused, or stored more than ${HOLD_MS} ms before`,
        );
      throw new NoRoomError(
        tenant!,
        claim!.tasks,
        unfinished,
        stored,
        room!.limits,
        room!.limits.bytes !== undefined ? { used: written, requested: claim!.bytes } : undefined,
      );
    }
    const answers: Array<{ id: string; outcome: 'created' | 'existing'; status: TaskStatus }> = [];
    (replies as Array<Array<['created' | 'existing', string, string]>>).forEach((reply, call) =>
      reply.forEach(
        ([outcome, id, status], at) => (answers[order[call]![at]!] = { id, outcome, status: status as TaskStatus }),
      ),
    );
    return answers;
  }

  /**
   * One CREATE call for a batch of tasks (CREATE_BATCH at most). Each idempotency key is read first,
   * and the task it names declared to the call with it (every key a script touches is declared); a key
   * that changed meanwhile (a submit with the same key at the same moment) is read again.
   */
  private async createBatch(
    cell: CellKeys,
    batch: readonly NewTask[],
    ts: string,
    room: Room | undefined,
    sent: () => void,
    orders: ReadonlyMap<NewTask, number>,
  ): Promise<CreateReply> {
    const keys = batch.flatMap((task) =>
      task.idempotencyKey !== undefined && task.listed
        ? [cell.idempotency(task.listed.tenant, task.idempotencyKey)]
        : [],
    );
    // Without idempotency keys, sent at once: in the order the caller called (its turn of admission follows).
    if (!keys.length) {
      const reply = this.sendCreate(cell, batch, ts, room, new Map(), orders);
      sent();
      return reply;
    }
    for (let attempt = 1; ; attempt++) {
      const values = await this.redis.mget(...keys);
      const named = new Map(
        keys.flatMap((key, index) => (values[index] ? [[key, values[index]] as [string, string]] : [])),
      );
      const reply = this.sendCreate(cell, batch, ts, room, named, orders);
      if (attempt === 1) sent();
      if ((await reply)[0]?.[0] !== 'reread') return reply;
      if (attempt === 3)
        throw new KeysChangedError('the idempotency keys kept changing while their tasks were created');
    }
  }

  private sendCreate(
    cell: CellKeys,
    batch: readonly NewTask[],
    ts: string,
    room: Room | undefined,
    named: ReadonlyMap<string, string>,
    orders: ReadonlyMap<NewTask, number>,
  ): Promise<CreateReply> {
    // Every key, the order counter first; `push` answers the new length: a key's 1-based index in KEYS.
    const keys: string[] = [cell.orderCounter];
    // Each task's fields, then its first event's body: as they are, outside the payload (nothing decodes them).
    const args: Array<string | Buffer> = [];
    // The tenants' lists the waiting tasks join (by key), each with its pool's ring.
    const lists = new Map<string, { ring: string; tenant: string; index: number }>();
    const tenants = new Set<string>();
    // The set of concurrency keys with waiting tasks, declared when a task joins a key's queue.
    let gatePending: number | undefined;
    // A key named by many tasks of the batch (their tenant's list, a concurrency key's queue) is declared
    // once: each key costs the script.
    const declared = new Map<string, number>();
    const declare = (key: string) => {
      let index = declared.get(key);
      if (index === undefined) declared.set(key, (index = keys.push(key)));
      return index;
    };
    const payloads = batch.map((task) => {
      const { id } = task.fields;
      const tenant = task.listed?.tenant ?? task.fields.tenant ?? DEFAULT_TENANT;
      tenants.add(tenant);
      // Its packed events' key right after its record's (the script takes it from there).
      const record = keys.push(this.keys.task(id));
      keys.push(this.keys.packedEvents(id));
      const indexes = task.listed
        ? [
            declare(cell.tenantTasks(task.listed.tenant)),
            ...(task.listed.batch !== undefined
              ? [declare(cell.tenantBatch(task.listed.tenant, task.listed.batch))]
              : []),
          ]
        : [];
      const idempotencyKey =
        task.idempotencyKey !== undefined && task.listed
          ? cell.idempotency(task.listed.tenant, task.idempotencyKey)
          : undefined;
      const idempotency = idempotencyKey !== undefined ? keys.push(idempotencyKey) : undefined;
      // The key's value as read (the script checks it is still that), and what it names.
      const value = idempotencyKey !== undefined ? named.get(idempotencyKey) : undefined;
      const keyed = value !== undefined ? parseIdempotencyValue(value) : undefined;
      const existing = keyed && {
        id: keyed.taskId,
        key: keys.push(this.keys.task(keyed.taskId)),
        value,
        ...(keyed.digest !== undefined ? { digest: keyed.digest } : {}),
      };
      // Its first event's line, as the scripts make one, at the task's creation: its packed string begins
      // with it. Its record keeps the event, short (`first`), for its first run's claim, which reads the
      // record: the run then holds every line, and its end writes the packed string whole (run-events.ts).
      const createdAt = task.fields.createdAt ?? ts;
      const first = task.event && eventLine(id, task.fields.rootId, 1, eventBody(task.event, id, createdAt));
      const copy = task.event && task.fields.createdAt ? firstEventCopy(task.event) : undefined;
      const fields = [...Object.entries(task.fields).flat(), ...(copy ? ['first', copy] : [])];
      const inputs = task.inputs?.flatMap((file) => [file.path, file.content]) ?? [];
      args.push(...fields, ...(first ? [storedOpen(`${first}\n`)] : []), ...inputs);
      const inputsKey = inputs.length ? keys.push(this.keys.inputs(id)) : undefined;
      let list: { index: number } | undefined;
      const gate = task.gated && task.listed ? declare(cell.concurrencyQueue(task.gated.base)) : undefined;
      if (gate !== undefined) gatePending = declare(cell.concurrencyPending);
      if (task.waiting && task.listed && gate === undefined) {
        const key = cell.fairList(task.waiting.pool, task.listed.tenant);
        list = lists.get(key);
        if (!list) {
          const joined = {
            ring: cell.fairRing(task.waiting.pool),
            tenant: task.listed.tenant,
            index: lists.size + 1,
          };
          lists.set(key, joined);
          list = joined;
        }
      }
      return {
        taskId: id,
        tenant,
        bytes: newTaskBytes(task),
        ...(inputsKey ? { inputs: inputs.length, inputsKey } : {}),
        status: task.fields.status,
        fields: fields.length,
        listed: task.listed !== undefined,
        events: task.event ? 1 : 0,
        record,
        lists: indexes,
        band: statusBand(task.fields.status),
        ...(idempotency !== undefined
          ? {
              idempotency,
              idempotencyValue: idempotencyValue(id, task.idempotencyDigest),
              ...(task.idempotencyDigest !== undefined ? { digest: task.idempotencyDigest } : {}),
            }
          : {}),
        ...(existing ? { existing } : {}),
        ...(list ? { wait: list.index, priority: task.waiting!.priority } : {}),
        ...(gate !== undefined ? { gate, gateBase: task.gated!.base } : {}),
        ...(task.once ? { once: true } : {}),
      };
    });
    const waiting = lists.size
      ? {
          arrivals: keys.push(cell.fairArrivals),
          lists: [...lists].map(([list, { ring, tenant }]) => ({
            list: keys.push(list),
            ring: keys.push(ring),
            tenant,
          })),
        }
      : {};
    // The first call of the claim checks the room for all its tasks; the calls after it take what it held.
    const roomer = batch.find((task) => task.listed || task.once);
    const tenant = roomer && tenantOf(roomer);
    const roomCheck =
      room?.claim && tenant !== undefined
        ? {
            room: {
              list: declare(cell.tenantTasks(tenant)),
              held: keys.push(cell.tenantRoomHeld(tenant)),
              expiry: keys.push(cell.tenantRoomUntil(tenant)),
              heldBytes: keys.push(cell.tenantRoomHeldBytes(tenant)),
              counter: keys.push(cell.tenantBytes(tenant)),
              id: room.claim.id,
              tasks: room.claim.tasks,
              bytes: room.claim.bytes,
              first: room.claim.first,
              unfinished: room.limits.unfinished,
              stored: room.limits.stored,
              ...(room.limits.bytes !== undefined ? { maxBytes: room.limits.bytes } : {}),
            },
          }
        : {};
    const counters = Object.fromEntries([...tenants].map((name) => [name, keys.push(cell.tenantBytes(name))]));
    const listedTenants = [...new Set(batch.flatMap((task) => (task.listed ? [task.listed.tenant] : [])))];
    const payload = {
      idempotencyTtlMs: this.retentionMs,
      ...(orders.size ? { orders: batch.flatMap((task) => (task.listed ? [orders.get(task)!] : [])) } : {}),
      ...saidOnce(payloads, SHARED_TASK_FIELDS),
      counters,
      ...(listedTenants.length ? { tenants: { key: keys.push(cell.tenants), names: listedTenants } } : {}),
      ...waiting,
      ...roomCheck,
      ...(gatePending !== undefined ? { gatePending } : {}),
    };
    return CREATE.run(this.redis, {
      keys: { orderCounterKey: keys[0]! },
      args: { payloadJson: wellFormedJson(JSON.stringify(payload)) },
      restKeys: keys.slice(1),
      restArgs: args,
    }) as Promise<CreateReply>;
  }

  /** Tells `observer` of every commit this store applies from now on. */
  observe(observer: (commit: AppliedCommit) => void): void {
    this.observer = observer;
  }

  /** Writes a change through the commit script; see `CommitResult` for what it answers. */
  async commit(options: CommitOptions): Promise<CommitResult> {
    const bodies = this.eventBodies(options);
    const reply = await this.runCommit(options, bodies, false);
    const result = commitResult(reply);
    this.heldEvents(options, bodies, result);
    return this.observed(options, result, reply[6] === 1);
  }

  /**
   * A commit that also reads the task in the same round trip: its record as it was before the commit
   * (when there is one) and its memory (when the commit is applied). A run's claim of its task.
   */
  async commitAndRead(options: CommitOptions): Promise<ReadCommitResult> {
    const bodies = this.eventBodies(options);
    const raw = (await this.runCommit(options, bodies, true)) as unknown as ReadCommitReply;
    const [outcome, lastSeq, status, stop, joined, memory, delivery, small] = raw;
    const result: ReadCommitResult = commitResult([
      String(outcome) as CommitOutcome,
      lastSeq,
      String(status),
      String(stop),
    ]);
    const hash = joined ? recordOf(joined) : {};
    const record = joined && parseTaskRecord(hash);
    if (record) result.record = record;
    if (memory) result.memory = memory.map((entry) => JSON.parse(entry.toString()) as MemoryEntry);
    if (options.holdEventsFor && result.applied && small === 1) {
      const { taskId } = options;
      // Held from before the claim's own events, which are the run's first; a first run holds every event
      // (its task's first is in its record), and its end writes them all.
      const seq = result.seq - bodies.length;
      const first = seq === 1 && hash.packed === '1' ? firstEventLine(taskId, hash) : undefined;
      this.runEvents.start(options.holdEventsFor, {
        taskId,
        rootId: result.record?.rootId ?? taskId,
        seq,
        lines: first ? [first] : [],
      });
      this.runEvents.added(options.holdEventsFor, bodies, result.seq);
    } else this.heldEvents(options, bodies, result);
    return this.observed(options, result, delivery === 1);
  }

  /** Each event's body as the script takes it, written at this moment. */
  private eventBodies(options: CommitOptions): string[] {
    const ts = new Date().toISOString();
    return (options.events ?? []).map((event) => eventBody(event, options.taskId, ts));
  }

  /** A run's commit: what it wrote joins its held events; a change of status, or a refusal, lets them go. */
  private heldEvents(options: CommitOptions, bodies: readonly string[], result: CommitResult): void {
    const { runToken } = options;
    if (!runToken) return;
    if (!result.applied || options.status) this.runEvents.drop(runToken);
    else this.runEvents.added(runToken, bodies, result.seq);
  }

  /** Tells `listener` of every write refused from now on because another run holds its task. */
  onStaleWrite(listener: (taskId: string) => void): void {
    this.staleListener = listener;
  }

  private observed<Result extends CommitResult>(options: CommitOptions, result: Result, delivery: boolean): Result {
    if (result.applied && this.observer && options.events?.length)
      this.observer({ taskId: options.taskId, events: options.events, delivery });
    if (result.outcome === 'stale_token') this.staleListener?.(options.taskId);
    return result;
  }

  /** Its reply is a `ReadCommitReply` when it reads. */
  private async runCommit(options: CommitOptions, bodies: readonly string[], read: boolean): Promise<CommitReply> {
    // (one cell: nothing to wait for on every commit)
    const others = this.totals ? await this.otherCells(options) : undefined;
    if (!this.durability) return this.sendCommit(this.redis, options, bodies, read, others) as Promise<CommitReply>;
    // Right behind the commit, in one pipeline: on the same connection, and on a Redis Cluster to the
    // commit's own node (a pipeline goes where its keys are). Answered once the replicas hold it.
    const { replicas, timeoutMs } = this.durability;
    // The scripts are commands of the connection before its pipeline is made (lua-script.ts).
    COMMIT.define(this.redis);
    const pipeline = this.redis.pipeline();
    void this.sendCommit(pipeline, options, bodies, read, others);
    pipeline.wait(replicas, timeoutMs);
    const replies = await pipeline.exec();
    const [[commitError, result], [waitError, confirmed]] = replies as Array<[Error | null, unknown]> as [
      [Error | null, CommitReply],
      [Error | null, number],
    ];
    if (commitError) throw commitError;
    // (a reading commit's reply is Buffers)
    if (String(result[0]) === 'applied' && (waitError || confirmed < replicas)) {
      throw new CommitNotReplicated(options.taskId, replicas, timeoutMs);
    }
    return result;
  }

  /** With several cells and a tenant limit a commit checks, what the tenant holds in the other cells. */
  private async otherCells(options: CommitOptions): Promise<OtherCells | undefined> {
    if (!this.totals) return undefined;
    const { tenant, taskId } = options;
    const limited =
      this.tenantMaxBytes?.[tenant] !== undefined ||
      this.tenantMaxBytes?.['*'] !== undefined ||
      this.tenantLimits?.[tenant] !== undefined ||
      this.tenantLimits?.['*'] !== undefined;
    if (!limited) return undefined;
    return this.totals.others(tenant, this.keys.cellOf(taskId).cell, new Date().toISOString().slice(0, 10));
  }

  private sendCommit(
    target: Redis | ChainableCommander,
    options: CommitOptions,
    bodies: readonly string[],
    read: boolean,
    others: OtherCells | undefined,
  ): Promise<unknown> | ChainableCommander {
    const { taskId, tenant } = options;
    if (options.firstTime && !read) throw new Error('firstTime fields are written by commitAndRead only');
    const messages = options.messages ?? [];
    const events = options.events ?? [];
    const add = counters(options.usage, events);
    const fields = Object.entries(options.fields ?? {}).flat();
    const ts = new Date().toISOString();
    const ends = options.status !== undefined && TERMINAL_STATUSES.has(options.status);
    // A run that ends packs its task's events, when it holds them all (run-events.ts).
    const pack = ends && options.runToken ? this.runEvents.pack(options.runToken, bodies) : undefined;
    const maxBytes = this.tenantMaxBytes?.[tenant] ?? this.tenantMaxBytes?.['*'];
    const cell = this.keys.cellOf(taskId);
    const payload = {
      ...(this.sharded ? { publish: 'SPUBLISH' } : {}),
      ...(maxBytes !== undefined ? { tenantMaxBytes: maxBytes } : {}),
      ...(others ? { others } : {}),
      ...(this.tenantLimits ? { tenantLimits: this.tenantLimits } : {}),
      ...(read ? { read: true } : {}),
      ...(read && options.holdEventsFor ? { holdEvents: true } : {}),
      ...(pack ? { pack: { seq: pack.seq, from: pack.from } } : {}),
      ...(options.status ? { status: options.status, band: statusBand(options.status) } : {}),
      ...(options.expect ? { expect: options.expect } : {}),
      ...(options.expectSeq !== undefined ? { expectSeq: options.expectSeq } : {}),
      ...(options.runToken ? { runToken: options.runToken } : {}),
      ...(read && options.expectJob ? { expectJob: options.expectJob } : {}),
      ...(fields.length ? { fields: fields.length } : {}),
      ...(options.firstTime ? { firstTime: options.firstTime } : {}),
      ...(add ? { add } : {}),
      ...(options.steps !== undefined ? { steps: options.steps } : {}),
      ...(ends ? { expireAt: Date.now() + this.retentionMs } : {}),
      ...(messages.length ? { messages: messages.length } : {}),
      ...(events.length ? { events: events.length } : {}),
      // The lease's key is the first after the named ones (COMMIT's spec).
      ...(options.lease ? { lease: { index: COMMIT_KEYS + 1, ms: options.lease.ms } } : {}),
      // The due set's key too (a commit has a lease or a due, never both).
      ...(options.due
        ? {
            due: {
              index: COMMIT_KEYS + 1,
              ms: Math.max(0, Math.round(options.due.ms)),
              member: options.due.member,
              jobId: options.due.jobId,
            },
          }
        : {}),
    };
    return COMMIT[read ? 'runBuffer' : 'run'](target, {
      keys: {
        taskKey: this.keys.task(taskId),
        messagesKey: this.keys.messages(taskId),
        eventsKey: this.keys.events(taskId),
        rootKey: this.keys.task(rootOf(taskId)),
        tenantBytesKey: cell.tenantBytes(tenant),
        spendKey: cell.tenantSpend(tenant, ts.slice(0, 10)),
      },
      // (a step's commits touch none of these: commit.lua's status, pack, claim and lease paths do)
      ...(options.status || pack || read || options.lease || options.due
        ? {
            lateKeys: {
              packedKey: this.keys.packedEvents(taskId),
              expiryKey: cell.expiry,
              toCompactKey: cell.toCompact,
              tenantTasksKey: cell.tenantTasks(tenant),
              webhooksKey: this.keys.webhooks(taskId),
              webhooksDueKey: cell.tenantWebhooksDue(tenant),
              webhookTenantsKey: cell.webhookTenants,
              webhooksPendingKey: cell.webhooksPending,
            },
          }
        : {}),
      args: {
        payloadJson: wellFormedJson(JSON.stringify(payload)),
        taskId,
        tenant,
        // (what only events need: none without them, each argument's bytes cost the script)
        eventsChannel: events.length ? this.keys.eventsChannel(taskId) : '',
        lineHead: events.length ? eventLineHead(taskId) : '',
        lineRoot: events.length ? eventLineRoot(rootOf(taskId)) : '',
      },
      restKeys: options.lease ? [options.lease.key] : options.due ? [options.due.key, options.due.runsKey] : [],
      // Passed as they are, never decoded by the script: a lone surrogate's escape in JSON text stays as
      // written; in a field's value it is sent as U+FFFD (UTF-8 has none), as wellFormedJson makes it.
      restArgs: [
        ...messages.map((message) => JSON.stringify(message)),
        ...bodies,
        ...fields,
        ...(pack ? [pack.blob] : []),
      ],
    });
  }

  /**
   * Holds room for a submit of `tasks` (writing `bytes`) that `create` stores over several calls, across
   * every cell (cell-room.ts): its calls are then made without a room, and the hold let go after them.
   */
  holdRoom(tenant: string, tasks: number, bytes: number, limits: RoomLimits): Promise<HeldRoom> {
    return holdRoom(this, tenant, tasks, bytes, limits);
  }

  /** What `FairAdmission.recover` needs of leased tasks (undefined: no such task). */
  async leasedTasks(ids: readonly string[]): Promise<Array<LeasedTask | undefined>> {
    const pipeline = cellPipeline(this.redis);
    for (const id of ids) pipeline.hmget(this.keys.task(id), 'tenant', 'status', 'jobId');
    return ((await pipeline.exec()) ?? []).map(([, row]) => {
      const [tenant, status, jobId] = row as Array<string | null>;
      return status
        ? {
            tenant: tenant ?? DEFAULT_TENANT,
            queued: status === 'queued',
            ...(jobId ? { jobId } : {}),
          }
        : undefined;
    });
  }

  /** The task as shown; a planned task with its plan, its subtasks' statuses and its progress. */
  async get(taskId: string): Promise<TaskView | undefined> {
    return this.viewOf(await this.getRecord(taskId));
  }

  /**
   * The task as shown (get), its result cut in Redis to its first `headBytes` and last `tailBytes` bytes
   * around a note of what was left out when it holds more: a result of megabytes never reaches this
   * process. `resultBytes`: the whole result's size (UTF-8), null without one; `resultCut`: it was cut.
   */
  async getCut(
    taskId: string,
    options: { headBytes: number; tailBytes: number },
  ): Promise<{ task: TaskView; resultBytes: number | null; resultCut: boolean } | undefined> {
    const reply = (await READ_CUT.run(this.redis, {
      keys: { taskKey: this.keys.task(taskId) },
      args: { headBytes: options.headBytes, tailBytes: options.tailBytes },
    })) as string[];
    const { resultBytes, resultTail, ...fields } = recordHash(
      reply.filter((_, index) => index % 2 === 0),
      reply.filter((_, index) => index % 2 === 1),
    );
    const bytes = resultBytes === undefined ? null : Number(resultBytes);
    if (resultTail !== undefined && fields.result !== undefined && bytes !== null) {
      // A character the cut split reads as U+FFFD: left out.
      const head = fields.result.replace(/\uFFFD$/, '');
      const tail = resultTail.replace(/^\uFFFD{1,3}/, '');
      const left = bytes - options.headBytes - options.tailBytes;
      fields.result = `${head}\n…[${left} bytes left out; ${bytes} in all: GET /v1/tasks/:id has the whole]…\n${tail}`;
    }
    const task = await this.viewOf(parseTaskRecord(fields));
    return task && { task, resultBytes: bytes, resultCut: resultTail !== undefined };
  }

  private async viewOf(record: TaskRecord | undefined): Promise<TaskView | undefined> {
    if (!record) return undefined;
    const view = taskView(record);
    if (!record.children) return view;
    const ids = record.children;
    const pipeline = cellPipeline(this.redis);
    for (const id of ids)
      pipeline.hmget(
        this.keys.task(id),
        'agent',
        'status',
        'planId',
        'promptTokens',
        'completionTokens',
        'costMicroUsd',
      );
    const rows = ((await pipeline.exec()) ?? []).map(([, row]) => row as Array<string | null>);
    const children = ids.map((id, index) => {
      const [agent, status, planId] = rows[index] ?? [null, null, null];
      return { id, planId: planId ?? '', agent: agent ?? '', status: (status ?? 'pending') as TaskStatus };
    });
    const plan = (record.plan ?? []).map(({ id, agent, task, need, taskId: subtaskId, version }) => ({
      id,
      agent,
      task,
      need,
      taskId: subtaskId,
      version,
    }));
    // Done is completed: a cancelled or failed subtask has ended, but is not done.
    const done = children.filter((child) => child.status === 'completed').length;
    const ended = children.filter((child) => TERMINAL_STATUSES.has(child.status)).length;
    const totalUsage = rows.reduce(
      (total, row) => ({
        promptTokens: total.promptTokens + Number(row[3] ?? 0),
        completionTokens: total.completionTokens + Number(row[4] ?? 0),
      }),
      { ...view.usage },
    );
    const totalCostUsd =
      rows.reduce((total, row) => total + Number(row[5] ?? 0), Math.round(view.costUsd * 1_000_000)) / 1_000_000;
    const statusOf = new Map(children.map((child) => [child.id, child.status]));
    const waitingFor =
      view.waitingFor?.kind === 'children'
        ? {
            ...view.waitingFor,
            running: view.waitingFor.children.filter((id) => !TERMINAL_STATUSES.has(statusOf.get(id) ?? 'pending')),
          }
        : view.waitingFor;
    return {
      ...view,
      waitingFor,
      plan,
      children,
      progress: { done, ended, total: children.length },
      totalUsage,
      totalCostUsd,
    };
  }

  /** How many of a tenant's submitted tasks (every tenant's: undefined) are in each status. */
  async countByStatus(tenant?: string): Promise<Record<TaskStatus, number>> {
    return countByStatus(this.redis, await this.indexesOf(tenant));
  }

  /** A tenant's list of tasks, or every tenant's (undefined): an admin's list merges them (task-index.ts). */
  async indexesOf(tenant?: string): Promise<string[]> {
    const cells = this.keys.cells;
    if (tenant !== undefined) return cells.map((cell) => cell.tenantTasks(tenant));
    const names = await Promise.all(cells.map((cell) => this.redis.smembers(cell.tenants)));
    return cells.flatMap((cell, index) => names[index]!.map((name) => cell.tenantTasks(name)));
  }

  /** A pool's jobs finished in each of the last `minutes` minutes, and in all (finished-jobs.ts). */
  finishedJobs(pool: string, minutes: number, now = Date.now()): Promise<FinishedSeries> {
    return readFinishedJobs(this.redis, this.keys, pool, minutes, now);
  }

  /**
   * The newest submitted tasks of some statuses (a tenant's, or every tenant's: undefined), each read
   * with only `fields` of its record: one pipeline of HMGETs, never a whole record's result.
   */
  async newestRecords(options: {
    tenant?: string | undefined;
    statuses: readonly TaskStatus[];
    count: number;
    fields: readonly string[];
  }): Promise<TaskRecord[]> {
    const newest = await newestInIndex(this.redis, await this.indexesOf(options.tenant), {
      statuses: options.statuses,
      count: options.count,
    });
    const read = cellPipeline(this.redis);
    for (const { id } of newest) read.hmget(this.keys.task(id), ...options.fields);
    return ((await read.exec()) ?? [])
      .map(([, values]) => parseTaskRecord(recordHash(options.fields, values as Array<string | null>)))
      .filter((record): record is TaskRecord => record !== undefined);
  }

  /** The task's record, parsed; undefined when there is none. */
  async getRecord(taskId: string): Promise<TaskRecord | undefined> {
    return parseTaskRecord(await this.redis.hgetall(this.keys.task(taskId)));
  }

  /**
   * The task's record with only `fields` read (one HMGET; they must hold id, rootId, agent and status),
   * the others at their defaults: for a caller that needs a few fields of a task whose result, plan or
   * held calls may be megabytes.
   */
  /** Only the fields it reads are typed: a caller that reads one it did not ask for does not compile. */
  async getRecordFields<F extends keyof TaskRecord & string>(
    taskId: string,
    fields: readonly F[],
  ): Promise<Pick<TaskRecord, F> | undefined> {
    return parseTaskRecord(recordHash(fields, await this.redis.hmget(this.keys.task(taskId), ...fields)));
  }

  /** What a copy of each task would write when created (createdBytes), from its fields' sizes: none is read. */
  async copyBytes(taskIds: readonly string[]): Promise<number[]> {
    const sizes = cellPipeline(this.redis);
    for (const id of taskIds) for (const field of CREATED_FIELDS) sizes.hstrlen(this.keys.task(id), field);
    const replies = ((await sizes.exec()) ?? []).map(([, size]) => Number(size ?? 0));
    const per = CREATED_FIELDS.length;
    return taskIds.map((_, index) => createdBytesOfSizes(replies.slice(index * per, (index + 1) * per)));
  }

  /**
   * A page of submitted tasks, newest first. Each row carries its prompt's first LIST_PREVIEW_BYTES bytes
   * (its result's too, without `summary`), cut in Redis (`truncated` says so); a page ends early, with
   * its cursor, before its JSON passes LIST_PAGE_BYTES (it holds one row at least). A search (`q`) page
   * also ends, with its cursor, once it read SEARCH_PAGE_BYTES of prompts: it may hold fewer matches
   * than `limit`, none even, with more to come.
   */
  async list(
    options: ListTasksOptions,
  ): Promise<{ tasks: Array<TaskListView | TaskSummaryView>; nextCursor: string | null }> {
    const { tenant, status, batch } = options;
    // A batch has one list (any status, scored by order): its tasks are filtered by status as they are read.
    const byBatch = batch !== undefined && tenant !== undefined;
    // Lower case as the script makes the prompt: ASCII letters only.
    const needle = options.q?.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
    const found: Array<TaskListView | TaskSummaryView> = [];
    let pageBytes = 0;
    const fields = options.summary ? LIST_ROW_FIELDS : LIST_ROW_FIELDS_WITH_RESULT;
    let before = options.cursor !== undefined ? Number(options.cursor) : undefined;
    let scanned = 0;
    let scannedBytes = 0;
    // Pages of the list, newest first, until the page is full (a search may read several).
    const filtered = needle !== undefined || (byBatch && status !== undefined);
    for (;;) {
      const page = filtered ? 200 : options.limit;
      const entries = byBatch
        ? await this.newestOfBatch(tenant, batch, before, page)
        : await newestInIndex(this.redis, await this.indexesOf(tenant), {
            ...(status ? { statuses: [status] } : {}),
            ...(before !== undefined ? { beforeOrder: before } : {}),
            count: page,
          });
      // A search matches in Redis first (a prompt is read whole only there, up to the page's bytes),
      // then reads its rows.
      const search = filtered
        ? await searchPrompts({
            redis: this.redis,
            keys: this.keys,
            entries,
            needle: needle ?? '',
            status: byBatch ? (status ?? '') : '',
            budgetBytes: SEARCH_PAGE_BYTES - scannedBytes,
            atLeastOne: scannedBytes === 0,
          })
        : { read: entries, matches: entries, bytes: 0 };
      const { read, matches } = search;
      // The page's prompt bytes are spent: the tasks not read are the next page's.
      const spent = read.length < entries.length;
      const wanted = matches.slice(0, options.limit - found.length);
      const pipeline = cellPipeline(this.redis);
      for (const { id } of wanted)
        void READ_LIST_ROW.run(pipeline, {
          keys: { taskKey: this.keys.task(id) },
          args: { previewBytes: LIST_PREVIEW_BYTES },
          restArgs: fields,
        });
      for (const [index, [error, reply]] of ((await pipeline.exec()) ?? []).entries()) {
        if (error) throw error;
        const values = reply as Array<string | null>;
        const record = parseTaskRecord(recordHash(fields, values));
        if (!record) {
          before = wanted[index]!.order;
          continue;
        }
        const row = listRow(record, values[fields.length] === '1', options.summary ?? false);
        const bytes = Buffer.byteLength(JSON.stringify(row));
        // Full: this row starts the next page.
        if (found.length && pageBytes + bytes > LIST_PAGE_BYTES) return { tasks: found, nextCursor: String(before) };
        before = wanted[index]!.order;
        pageBytes += bytes;
        found.push(row);
        if (found.length === options.limit) return { tasks: found, nextCursor: String(before) };
      }
      // On past the page; or, when more matched than were read (one read was removed meanwhile), past the last read.
      const more = matches.length > wanted.length;
      before = (more ? wanted.at(-1) : read.at(-1))?.order ?? before;
      scanned += read.length;
      scannedBytes += search.bytes;
      if (!more && (spent || entries.length < page || scanned >= SEARCH_SCAN_LIMIT)) {
        return { tasks: found, nextCursor: entries.length < page && !spent ? null : String(before) };
      }
    }
  }

  /** A lease on one of `tenant`'s `most` task searches at once over every API process (search-leases.ts). */
  takeSearchLease(tenant: string, most: number): Promise<{ release(): Promise<void> } | undefined> {
    return takeSearchLease({ redis: this.redis, keys: this.keys, tenant, most });
  }

  /** A batch's newest tasks below order `before` (its lists, one per cell, are scored by order alone). */
  private async newestOfBatch(
    tenant: string,
    batch: string,
    before: number | undefined,
    count: number,
  ): Promise<Array<{ id: string; order: number }>> {
    const read = cellPipeline(this.redis);
    for (const cell of this.keys.cells)
      read.zrevrangebyscore(
        cell.tenantBatch(tenant, batch),
        before === undefined ? '+inf' : `(${before}`,
        '-inf',
        'WITHSCORES',
        'LIMIT',
        0,
        count,
      );
    const found: Array<{ id: string; order: number }> = [];
    for (const entries of (await execPipeline(read)) as string[][])
      for (let at = 0; at < entries.length; at += 2) found.push({ id: entries[at]!, order: Number(entries[at + 1]) });
    return found.sort((a, b) => b.order - a.order).slice(0, count);
  }

  /** The status of many tasks at once; an unknown id (or another tenant's, given `viewer`) has status `null`. */
  async statuses(
    ids: readonly string[],
    viewer?: { tenant: string; admin: boolean },
  ): Promise<Array<{ id: string; status: TaskStatus | null }>> {
    const pipeline = cellPipeline(this.redis);
    for (const id of ids) pipeline.hmget(this.keys.task(id), 'status', 'tenant');
    const results = (await pipeline.exec()) ?? [];
    return ids.map((id, index) => {
      const [status, tenant] = (results[index]?.[1] as Array<string | null> | undefined) ?? [null, null];
      const visible = !viewer || viewer.admin || (tenant ?? DEFAULT_TENANT) === viewer.tenant;
      return { id, status: visible ? ((status as TaskStatus | null) ?? null) : null };
    });
  }

  async messages(taskId: string): Promise<MemoryEntry[]> {
    const raw = await this.redis.lrange(this.keys.messages(taskId), 0, -1);
    return raw.map((entry) => JSON.parse(entry) as MemoryEntry);
  }

  async events(taskId: string, afterSeq?: number): Promise<TaskEvent[]> {
    return (await this.storedEvents(taskId, afterSeq)).map((stored) => stored.event);
  }

  /** The same, a page at a time (event-pages.ts): for a reader that sends them on. */
  eventPages(taskId: string, afterSeq?: number): AsyncGenerator<StoredEvent[]> {
    return eventPages(this.eventRead(taskId, afterSeq));
  }

  /** The events with their JSON text as stored, to pass on without writing them out again (SSE). */
  storedEvents(taskId: string, afterSeq?: number): Promise<StoredEvent[]> {
    return readEvents(this.eventRead(taskId, afterSeq));
  }

  /** Where a read of a task's events looks: its list and its compacted events. */
  private eventRead(taskId: string, afterSeq: number | undefined) {
    return {
      redis: this.redis,
      key: this.keys.events(taskId),
      packedKey: this.keys.packedEvents(taskId),
      ...(afterSeq ? { afterSeq } : {}),
    };
  }
}

function commitResult([outcome, seq, status, stop]: CommitReply): CommitResult {
  return {
    outcome,
    applied: outcome === 'applied',
    status: (status || undefined) as TaskStatus | undefined,
    cancelRequested: stop === '1',
    stop: stop === 'budget' || stop === 'tenant_limit' || stop === 'tenant_bytes' ? stop : undefined,
    seq: Number(seq),
  };
}

/**
 * An event's body as the scripts take it (commit-script.ts, ENVELOPE): its JSON fields after `id`, `seq`
 * and `rootId`, which the script puts in front; `taskId` is the owner's unless the event is mirrored.
 */
/**
 * A task's first event as its record keeps it (`first`): what its line is made of besides the task's id,
 * root and creation time, which the record holds; its first run's claim empties it. Only when that is
 * at most 64 bytes (UTF-8): a longer value
 * turns a small record's hash from Redis's compact encoding into a table (hash-max-listpack-value, 64 by
 * default), about 1 KB more for as long as the task is kept.
 */
function firstEventCopy(event: StoredEventInput): string | undefined {
  if (event.taskId || event.at) return undefined;
  const { type, agent, worker, step, data } = event;
  const copy = JSON.stringify({ type, agent, worker, step, data });
  return Buffer.byteLength(copy) <= 64 ? copy : undefined;
}

/** The tenant a new task is stored for. */
function tenantOf(task: NewTask): string {
  return task.listed?.tenant ?? task.fields.tenant ?? DEFAULT_TENANT;
}

/** What a batch's tasks mostly say alike, in CREATE's payload: said once for all (`saidOnce`). */
const SHARED_TASK_FIELDS = [
  'tenant',
  'bytes',
  'status',
  'fields',
  'listed',
  'events',
  'band',
  'wait',
  'priority',
  'lists',
];

/**
 * CREATE's tasks, with what the first says of `names` said once (`shared`, each task's default in the
 * script): a task's entry holds only what differs, `false` for what it does not have. A batch's tasks
 * are mostly alike, and every byte of the payload costs the script about 95 instructions to decode.
 */
function saidOnce(
  tasks: ReadonlyArray<Record<string, unknown>>,
  names: readonly string[],
): { tasks: Array<Record<string, unknown>>; shared?: Record<string, unknown> } {
  if (tasks.length < 2) return { tasks: [...tasks] };
  const shared = Object.fromEntries(
    names.flatMap((name) => (tasks[0]![name] === undefined ? [] : [[name, tasks[0]![name]]])),
  );
  // (a list of key indexes is alike when its text is)
  const text = (value: unknown) => (typeof value === 'object' ? JSON.stringify(value) : value);
  const entries = tasks.map((task) => {
    const entry = { ...task };
    for (const [name, value] of Object.entries(shared)) {
      if (text(entry[name]) === text(value)) delete entry[name];
      else if (entry[name] === undefined) entry[name] = false;
    }
    return entry;
  });
  return { tasks: entries, shared };
}

/**
 * A record as a reading commit answers it: its names and values, each ended by byte 255 but the last, or
 * (a long one) each a string of its own.
 */
function recordOf(joined: Buffer | Buffer[]): Record<string, string> {
  const hash: Record<string, string> = {};
  if (Array.isArray(joined)) {
    for (let index = 0; index < joined.length; index += 2) hash[String(joined[index])] = String(joined[index + 1]);
    return hash;
  }
  let name: string | undefined;
  for (let start = 0; start <= joined.length;) {
    const end = joined.indexOf(0xff, start);
    const text = joined.toString('utf8', start, end < 0 ? joined.length : end);
    if (name === undefined) name = text;
    else {
      hash[name] = text;
      name = undefined;
    }
    if (end < 0) break;
    start = end + 1;
  }
  return hash;
}

/** The first event's line a record's copy makes (undefined: none kept, or one not readable). */
function firstEventLine(taskId: string, hash: Record<string, string>): string | undefined {
  if (!hash.first || !hash.createdAt) return undefined;
  try {
    const event = JSON.parse(hash.first) as StoredEventInput;
    return eventLine(taskId, hash.rootId ?? taskId, 1, eventBody(event, taskId, hash.createdAt));
  } catch {
    return undefined;
  }
}

function eventBody(event: StoredEventInput, owner: string, ts: string): string {
  // An empty taskId or time is none, as it always was.
  let body = `"taskId":${JSON.stringify(event.taskId || owner)},"ts":${JSON.stringify(event.at || ts)},"type":${JSON.stringify(event.type)}`;
  if (event.agent) body += `,"agent":${JSON.stringify(event.agent)}`;
  if (event.worker) body += `,"worker":${JSON.stringify(event.worker)}`;
  if (event.step !== undefined) body += `,"step":${JSON.stringify(event.step)}`;
  return `${body},"data":${JSON.stringify(event.data)}}`;
}

/**
 * What a commit adds to the task's counters, as whole numbers: its tokens, and from its `llm.response`
 * events the time its model calls took (the overview's model latency) and what they cost in micro-USD
 * (whole numbers add up exactly in Lua). Undefined when there is nothing to add.
 */
function counters(
  usage: TokenUsage | undefined,
  events: readonly StoredEventInput[],
): Record<string, number> | undefined {
  const add: Record<string, number> = {};
  const count = (name: string, value: number) => {
    if (value > 0) add[name] = (add[name] ?? 0) + Math.round(value);
  };
  if (usage) {
    count('promptTokens', usage.promptTokens);
    count('completionTokens', usage.completionTokens);
  }
  for (const event of events) {
    if (event.type !== 'llm.response') continue;
    count('modelMs', event.data.durationMs);
    count('costMicroUsd', (event.data.costUsd ?? 0) * 1_000_000);
  }
  return Object.keys(add).length ? add : undefined;
}

/** What creating a task writes, as its tenant's byte count has it (tenant-bytes.ts): its record and its input files. */
function newTaskBytes(task: NewTask): number {
  return createdBytes(task.fields) + inputFilesBytes(task.inputs);
}

/**
 * JSON.stringify writes a lone surrogate (half an emoji a model cut off) as a `\udXXX` escape, and only
 * then (pairs stay raw characters); Redis's Lua JSON decoder refuses those, and with them the whole
 * commit. Each becomes U+FFFD, the replacement character; an escaped backslash before it is kept apart.
 */
const LONE_SURROGATE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/gi;

function wellFormedJson(json: string): string {
  // Most text has no escaped surrogate at all: a plain search is enough to know.
  if (!json.includes('\\ud') && !json.includes('\\uD')) return json;
  return json.replace(LONE_SURROGATE, '$1\\ufffd');
}

/** A task as a list shows it (its prompt and result already cut, `truncated` when one was). */
function listRow(record: TaskRecord, truncated: boolean, summary: boolean): TaskListView | TaskSummaryView {
  const { result, ...rest } = taskView(record);
  return summary ? { ...rest, truncated } : { ...rest, result, truncated };
}

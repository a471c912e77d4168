/**
 * Every Redis key and channel agentq uses, in one place, under one prefix, and the cells they fall in.
 *
 * A cell (docs/DESIGN.md, "Cells") is what one step of a task touches: the task and its whole plan,
 * and per cell its queues, lists, counters and sweeps' sets. A task's keys carry its cell's prefix,
 * found from its root's id alone (no lookup); an install has a fixed number of cells (AGENTQ_CELLS, 1:
 * the cell's prefix is the install's). With more, each cell's prefix is a hash tag of its own, chosen so
 * that the cells' slots spread evenly over a Redis Cluster's 16,384: any even split of the slots over
 * the masters then gives each its share. What no step needs at once (workers, model rate limits, the
 * storage version, the schedules' timers) lives under the install's own prefix, its home; schedules
 * live in cell 0, beside the byte counters their tenants' limits read (with one cell, the home's prefix).
 */
import { createHash, randomUUID } from 'node:crypto';
import { rootOf } from './task-ids.js';

/** The install's keys: its home's, and each task's (in its cell, by its id). */
export interface Keys {
  prefix: string;
  /** The storage version the data under the prefix is at (migrations/). */
  storageVersion: string;
  task(taskId: string): string;
  messages(taskId: string): string;
  /** A task's events: a list, one JSON event per element, the element at index `seq - 1` (task-events.ts). */
  events(taskId: string): string;
  /** An ended task's events, compacted: their lines, deflated (compact-events.ts). */
  packedEvents(taskId: string): string;
  eventsChannel(taskId: string): string;
  cancelChannel: string;
  /** A model's shared rate limit: the log of its window's calls, and until when the provider blocked it. */
  limitLog(model: string): string;
  limitBlocked(model: string): string;
  /**
   * A model's endpoint that a tenant's calls could not reach (model-outages.ts): its state (a hash), and
   * the jobs that wait for it to answer again (a set).
   */
  modelOutage(tenant: string, model: string): string;
  modelOutageWaiters(tenant: string, model: string): string;
  /** Where an outage opened or ended is said, so every worker knows which calls to ask about first. */
  outagesChannel: string;
  /** Ids of deleted tasks whose work directories a worker is still to remove (the API may not mount them). */
  workdirsToRemove: string;
  /** The subtasks of a root that reached an end. */
  finishedSubtasks(rootId: string): string;
  /** The needs of a subtask that completed. */
  doneNeeds(subtaskId: string): string;
  /** The shared scratchpad of a root task's subtasks. */
  scratchpad(rootId: string): string;
  /** The files a task was given on submit: a hash of path to content (its subtasks read their root's). */
  inputs(taskId: string): string;
  /** A task's webhook deliveries: a hash of delivery id to its state (webhook-deliveries.ts). */
  webhooks(taskId: string): string;
  /** Where a delivery made or resent outside a worker (the API's cancel) is told to the senders. */
  webhooksChannel: string;
  /**
   * Schedules (schedule-store.ts), all in the schedules' cell (cell 0, with their tenants' byte counters
   * there): a schedule's record (a hash), the files its task is given (a hash of path to content), its
   * last runs (a list, newest first); the schedules of a tenant and of every tenant (sorted sets, by
   * `order`), and the counter their orders come from.
   */
  schedule(scheduleId: string): string;
  scheduleFiles(scheduleId: string): string;
  scheduleRuns(scheduleId: string): string;
  tenantSchedules(tenant: string): string;
  everySchedule: string;
  scheduleOrder: string;
  /** The BullMQ queue whose job schedulers fire the schedules (a name no agent can have). */
  schedulesQueue: string;
  /** A pool's jobs finished in a minute (minutes since the epoch), and since its first (finished-jobs.ts). */
  finishedJobs(pool: string, minute: number): string;
  finishedJobsTotal(pool: string): string;
  /** Worker processes online: a set of ids, and one short-lived heartbeat key each. */
  workers: string;
  worker(workerId: string): string;
  /** With several cells: the room a tenant's submits hold while they create their tasks (cell-room.ts). */
  tenantRoomHolds(tenant: string): string;
  /** A tenant's task searches in flight over every API process: lease ids by when they end (search-leases.ts). */
  searchLeases(tenant: string): string;
  /** With several cells: the counter every cell's listed tasks take their orders from (one order for all lists). */
  homeOrderCounter: string;
  /** How many cells the install's tasks are in, as its first process recorded it (cell-count.ts). */
  cellCount: string;
  /** BullMQ's prefix for the schedules' queue (a cell's queues have their cell's, `CellKeys.bullPrefix`). */
  homeBullPrefix: string;
  /** Every cell's keys, by number (one: the install's prefix). */
  cells: readonly CellKeys[];
  /** The cell a task and its whole plan live in: its root's. */
  cellOf(taskId: string): CellKeys;
  /** The cell of a tenant's concurrency key or idempotency key: the tasks that name it live there. */
  cellOfKey(base: string): CellKeys;
}

/** A cell's keys: what one step of a task touches besides the task's own (and every key of the install's). */
export interface CellKeys extends Keys {
  /** Its number, 0 to the cell count less one. */
  cell: number;
  /** What its keys begin with (`prefix` stays the install's). */
  cellPrefix: string;
  /** BullMQ's own prefix for its queues. */
  bullPrefix: string;
  /** The tenants that submitted tasks: a set (an admin's list merges their lists, task-index.ts). */
  tenants: string;
  orderCounter: string;
  /** A tenant's submitted tasks: a sorted set, status and creation order in the score (task-index.ts). */
  tenantTasks(tenant: string): string;
  /** A tenant's tasks submitted with a batch id, by creation order. */
  tenantBatch(tenant: string, batch: string): string;
  /** The room a tenant's submits in flight hold for their later calls, and until when (tenant-room.ts). */
  tenantRoomHeld(tenant: string): string;
  tenantRoomUntil(tenant: string): string;
  /** The bytes of a submit's tasks its later calls will store, held by its first (tenant-room.ts). */
  tenantRoomHeldBytes(tenant: string): string;
  /** The bytes a tenant's stored tasks wrote to Redis, as written (tenant-bytes.ts). */
  tenantBytes(tenant: string): string;
  /** A tenant's idempotency key (hashed: a client's key may hold anything), naming the task it created. */
  idempotency(tenant: string, key: string): string;
  /** A tenant's spending of a UTC day (`YYYY-MM-DD`): a hash of `tokens` and `microUsd`, with tenant limits. */
  tenantSpend(tenant: string, day: string): string;
  /** Fair admission (fair-admission.ts): a pool's ring of tenants, a tenant's waiting tasks, the leases of popped ones, the arrival counter. */
  fairRing(pool: string): string;
  fairList(pool: string, tenant: string): string;
  fairLeases(pool: string): string;
  fairArrivals: string;
  /** Tasks whose run must wait (an outage, a retry's backoff, a shared limit), back through admission when due; and their next runs' job ids. */
  fairDue(pool: string): string;
  fairRuns(pool: string): string;
  /**
   * Concurrency keys (concurrency-gate.ts): a tenant's key is `<tenant>:<sha-256 of the key>` (its
   * base); its holders (a set) and its queue (a sorted set); the set of bases with waiting tasks.
   */
  concurrencyHolders(base: string): string;
  concurrencyQueue(base: string): string;
  concurrencyPending: string;
  /** Submitted tasks that ended, by the time their data expires. */
  expiry: string;
  /** Tasks that ended (subtasks too) whose event stream is to be compacted, by when they ended. */
  toCompact: string;
  /**
   * A tenant's webhook deliveries by when their next attempt is due (claimed in turns between tenants,
   * webhook-deliveries.ts); the tenants that have some there; every delivery not ended, by when it began;
   * the deliveries whose attempt is under way, by when its lease ends.
   */
  tenantWebhooksDue(tenant: string): string;
  webhookTenants: string;
  webhooksPending: string;
  webhooksLeased: string;
}

/** A tenant's concurrency key as Redis names it: two tenants' equal keys are two keys. */
export function concurrencyBase(tenant: string, key: string): string {
  return `${tenant}:${sha256(key)}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The cell of a task's root: its id's first 32 bits (a UUID's are random), modulo the cells. */
export function cellNumber(taskId: string, cells: number): number {
  return cells === 1 ? 0 : Number.parseInt(rootOf(taskId).slice(0, 8), 16) % cells;
}

/** The cell of a key (a concurrency key's base, an idempotency key): a hash of it, modulo the cells. */
export function keyCellNumber(key: string, cells: number): number {
  return cells === 1 ? 0 : Number.parseInt(sha256(key).slice(0, 8), 16) % cells;
}

/**
 * A new root task's id, in `cell` when given (a task that names a concurrency key or an idempotency
 * key lives in that key's cell, where its script checks the key): a UUID drawn until one is (the cell
 * count's draws on average, a few microseconds).
 */
export function newTaskId(keys: Keys, cell?: CellKeys): string {
  for (;;) {
    const id = randomUUID();
    if (!cell || keys.cellOf(id) === cell) return id;
  }
}

/** The Redis Cluster slot of a key, as Redis computes it: CRC16 (XMODEM) of its hash tag, or of it. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/**
 * Cell `cell`'s prefix: the install's, or (several cells) a hash tag of its own whose slot is in its
 * share of the 16,384 (the first of `<name>:c<cell>-0`, `-1`, ... that is). A prefix that is a hash tag
 * (`{agentq}`, on a Redis Cluster) gives its name; any other is the name itself.
 */
export function cellPrefix(prefix: string, cell: number, cells: number): string {
  if (cells === 1) return prefix;
  const tagged = prefix.startsWith('{') && prefix.endsWith('}');
  const name = tagged ? prefix.slice(1, -1) : prefix;
  const from = Math.floor((cell * 16384) / cells);
  const to = Math.floor(((cell + 1) * 16384) / cells);
  for (let salt = 0; ; salt++) {
    const tag = `${name}:c${cell}-${salt}`;
    const slot = keySlot(tag);
    if (slot >= from && slot < to) return tagged ? `{${tag}}` : tag;
  }
}

/** The keys of an install under `prefix`, with `cells` cells (default 1). */
export function createKeys(prefix: string, cells = 1): Keys {
  if (!Number.isInteger(cells) || cells < 1 || cells > 1024) throw new Error(`A cell count is 1 to 1024, not ${cells}`);
  const prefixes = Array.from({ length: cells }, (_, cell) => cellPrefix(prefix, cell, cells));
  const of = (taskId: string) => prefixes[cellNumber(taskId, cells)]!;
  // The schedules' cell: a schedule is written in one script with its tenant's byte counter there.
  const schedulesAt = prefixes[0]!;
  const home: Omit<Keys, 'cells' | 'cellOf' | 'cellOfKey'> = {
    prefix,
    storageVersion: `${prefix}:storage-version`,
    task: (taskId) => `${of(taskId)}:task:${taskId}`,
    messages: (taskId) => `${of(taskId)}:task:${taskId}:messages`,
    events: (taskId) => `${of(taskId)}:task:${taskId}:event-list`,
    packedEvents: (taskId) => `${of(taskId)}:task:${taskId}:events:packed`,
    eventsChannel: (taskId) => `${of(taskId)}:events:${taskId}`,
    cancelChannel: `${prefix}:cancel`,
    limitLog: (model) => `${prefix}:limit:${model}`,
    limitBlocked: (model) => `${prefix}:limit:${model}:blocked`,
    // The tenant first: a tenant's name has no ":", a model's may.
    modelOutage: (tenant, model) => `${prefix}:outage:${tenant}:${model}`,
    modelOutageWaiters: (tenant, model) => `${prefix}:outage-waiters:${tenant}:${model}`,
    outagesChannel: `${prefix}:outages`,
    workdirsToRemove: `${prefix}:tasks:workdirs-to-remove`,
    finishedSubtasks: (rootId) => `${of(rootId)}:task:${rootId}:finished`,
    doneNeeds: (subtaskId) => `${of(subtaskId)}:task:${subtaskId}:done-needs`,
    scratchpad: (rootId) => `${of(rootId)}:task:${rootId}:scratchpad`,
    inputs: (taskId) => `${of(taskId)}:task:${taskId}:inputs`,
    webhooks: (taskId) => `${of(taskId)}:task:${taskId}:webhooks`,
    webhooksChannel: `${prefix}:webhooks:added`,
    schedule: (scheduleId) => `${schedulesAt}:schedule:${scheduleId}`,
    scheduleFiles: (scheduleId) => `${schedulesAt}:schedule:${scheduleId}:files`,
    scheduleRuns: (scheduleId) => `${schedulesAt}:schedule:${scheduleId}:runs`,
    tenantSchedules: (tenant) => `${schedulesAt}:tenant:${tenant}:schedules`,
    everySchedule: `${schedulesAt}:schedules`,
    scheduleOrder: `${schedulesAt}:schedules:order`,
    schedulesQueue: 'agentq.schedules',
    homeBullPrefix: `${prefix}:bull`,
    cellCount: `${prefix}:cells`,
    homeOrderCounter: `${prefix}:tasks:order`,
    tenantRoomHolds: (tenant) => `${prefix}:tenant:${tenant}:room:holds`,
    searchLeases: (tenant) => `${prefix}:tenant:${tenant}:searches`,
    finishedJobs: (pool, minute) => `${prefix}:pool:${pool}:finished:${minute}`,
    finishedJobsTotal: (pool) => `${prefix}:pool:${pool}:finished`,
    workers: `${prefix}:workers`,
    worker: (workerId) => `${prefix}:worker:${workerId}`,
  };
  const cellKeys: CellKeys[] = [];
  const keys: Keys = {
    ...home,
    cells: cellKeys,
    cellOf: (taskId) => cellKeys[cellNumber(taskId, cells)]!,
    cellOfKey: (base) => cellKeys[keyCellNumber(base, cells)]!,
  };
  for (const [cell, at] of prefixes.entries()) {
    cellKeys.push({
      ...keys,
      cell,
      cellPrefix: at,
      bullPrefix: `${at}:bull`,
      tenants: `${at}:tenants`,
      orderCounter: `${at}:tasks:order`,
      tenantTasks: (tenant) => `${at}:tenant:${tenant}:tasks:index`,
      tenantBatch: (tenant, batch) => `${at}:tenant:${tenant}:batch:${batch}`,
      tenantRoomHeld: (tenant) => `${at}:tenant:${tenant}:room:held`,
      tenantRoomUntil: (tenant) => `${at}:tenant:${tenant}:room:until`,
      tenantRoomHeldBytes: (tenant) => `${at}:tenant:${tenant}:room:held-bytes`,
      tenantBytes: (tenant) => `${at}:tenant:${tenant}:bytes`,
      idempotency: (tenant, key) => `${at}:tenant:${tenant}:idem:${sha256(key)}`,
      tenantSpend: (tenant, day) => `${at}:spend:${tenant}:${day}`,
      fairRing: (pool) => `${at}:fair:${pool}:ring`,
      fairList: (pool, tenant) => `${at}:fair:${pool}:tenant:${tenant}`,
      fairLeases: (pool) => `${at}:fair:${pool}:leases`,
      fairArrivals: `${at}:fair:arrivals`,
      fairDue: (pool) => `${at}:fair:${pool}:due`,
      fairRuns: (pool) => `${at}:fair:${pool}:runs`,
      concurrencyHolders: (base) => `${at}:concurrency:${base}:holders`,
      concurrencyQueue: (base) => `${at}:concurrency:${base}:queue`,
      concurrencyPending: `${at}:concurrency:pending`,
      expiry: `${at}:tasks:expiry`,
      toCompact: `${at}:tasks:to-compact`,
      tenantWebhooksDue: (tenant) => `${at}:tenant:${tenant}:webhooks:due`,
      webhookTenants: `${at}:webhooks:tenants`,
      webhooksPending: `${at}:webhooks:pending`,
      webhooksLeased: `${at}:webhooks:leased`,
    });
  }
  return keys;
}

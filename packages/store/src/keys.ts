/** Every Redis key and channel agentq uses, in one place, under one prefix. */
import { createHash } from 'node:crypto';

export interface Keys {
  prefix: string;
  /** BullMQ's own prefix for its queues. */
  bullPrefix: string;
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
  /** The bytes a tenant's stored tasks wrote to Redis, as written (tenant-bytes.ts); `<tenantPrefix><tenant>:bytes`. */
  tenantBytes(tenant: string): string;
  tenantPrefix: string;
  /** A tenant's idempotency key (hashed: a client's key may hold anything), naming the task it created. */
  idempotency(tenant: string, key: string): string;
  /** A tenant's spending of a UTC day (`YYYY-MM-DD`): a hash of `tokens` and `microUsd`, with tenant limits. */
  tenantSpend(tenant: string, day: string): string;
  spendPrefix: string;
  /** A model's shared rate limit: the log of its window's calls, and until when the provider blocked it. */
  limitLog(model: string): string;
  limitBlocked(model: string): string;
  /** Fair admission (fair-admission.ts): a pool's ring of tenants, a tenant's waiting tasks, the leases of popped ones, the arrival counter. */
  fairRing(pool: string): string;
  fairList(pool: string, tenant: string): string;
  fairLeases(pool: string): string;
  fairArrivals: string;
  /**
   * Concurrency keys (concurrency-gate.ts): a tenant's key is `<tenant>:<sha-256 of the key>` (its
   * base); its holders (a set) and its queue (a sorted set); the set of bases with waiting tasks.
   */
  concurrencyBase(tenant: string, key: string): string;
  concurrencyHolders(base: string): string;
  concurrencyQueue(base: string): string;
  concurrencyPending: string;
  /** Submitted tasks that ended, by the time their data expires. */
  expiry: string;
  /** Tasks that ended (subtasks too) whose event stream is to be compacted, by when they ended. */
  toCompact: string;
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
  /** Webhook deliveries by when their next attempt is due, and those not ended by when they began. */
  webhooksDue: string;
  webhooksPending: string;
  /** Where a delivery made or resent outside a worker (the API's cancel) is told to the senders. */
  webhooksChannel: string;
  /** A schedule's record (a hash), its last runs (a list, newest first), and the schedules of a tenant (a sorted set by creation). */
  schedule(scheduleId: string): string;
  scheduleRuns(scheduleId: string): string;
  tenantSchedules(tenant: string): string;
  /** The BullMQ queue whose job schedulers fire the schedules (a name no agent can have). */
  schedulesQueue: string;
  /** A pool's jobs finished in a minute (minutes since the epoch), and since its first (finished-jobs.ts). */
  finishedJobs(pool: string, minute: number): string;
  finishedJobsTotal(pool: string): string;
  /** Worker processes online: a set of ids, and one short-lived heartbeat key each. */
  workers: string;
  worker(workerId: string): string;
}

/** A tenant's concurrency key as Redis names it: two tenants' equal keys are two keys. */
export function concurrencyBase(tenant: string, key: string): string {
  return `${tenant}:${createHash('sha256').update(key).digest('hex')}`;
}

export function createKeys(prefix: string): Keys {
  return {
    prefix,
    bullPrefix: `${prefix}:bull`,
    storageVersion: `${prefix}:storage-version`,
    task: (taskId) => `${prefix}:task:${taskId}`,
    messages: (taskId) => `${prefix}:task:${taskId}:messages`,
    events: (taskId) => `${prefix}:task:${taskId}:event-list`,
    packedEvents: (taskId) => `${prefix}:task:${taskId}:events:packed`,
    eventsChannel: (taskId) => `${prefix}:events:${taskId}`,
    cancelChannel: `${prefix}:cancel`,
    tenants: `${prefix}:tenants`,
    orderCounter: `${prefix}:tasks:order`,
    tenantTasks: (tenant) => `${prefix}:tenant:${tenant}:tasks:index`,
    tenantBatch: (tenant, batch) => `${prefix}:tenant:${tenant}:batch:${batch}`,
    tenantRoomHeld: (tenant) => `${prefix}:tenant:${tenant}:room:held`,
    tenantRoomUntil: (tenant) => `${prefix}:tenant:${tenant}:room:until`,
    tenantRoomHeldBytes: (tenant) => `${prefix}:tenant:${tenant}:room:held-bytes`,
    tenantBytes: (tenant) => `${prefix}:tenant:${tenant}:bytes`,
    tenantPrefix: `${prefix}:tenant:`,
    idempotency: (tenant, key) => `${prefix}:tenant:${tenant}:idem:${createHash('sha256').update(key).digest('hex')}`,
    tenantSpend: (tenant, day) => `${prefix}:spend:${tenant}:${day}`,
    spendPrefix: `${prefix}:spend:`,
    limitLog: (model) => `${prefix}:limit:${model}`,
    limitBlocked: (model) => `${prefix}:limit:${model}:blocked`,
    fairRing: (pool) => `${prefix}:fair:${pool}:ring`,
    fairList: (pool, tenant) => `${prefix}:fair:${pool}:tenant:${tenant}`,
    fairLeases: (pool) => `${prefix}:fair:${pool}:leases`,
    fairArrivals: `${prefix}:fair:arrivals`,
    concurrencyBase,
    concurrencyHolders: (base) => `${prefix}:concurrency:${base}:holders`,
    concurrencyQueue: (base) => `${prefix}:concurrency:${base}:queue`,
    concurrencyPending: `${prefix}:concurrency:pending`,
    expiry: `${prefix}:tasks:expiry`,
    toCompact: `${prefix}:tasks:to-compact`,
    workdirsToRemove: `${prefix}:tasks:workdirs-to-remove`,
    finishedSubtasks: (rootId) => `${prefix}:task:${rootId}:finished`,
    doneNeeds: (subtaskId) => `${prefix}:task:${subtaskId}:done-needs`,
    scratchpad: (rootId) => `${prefix}:task:${rootId}:scratchpad`,
    inputs: (taskId) => `${prefix}:task:${taskId}:inputs`,
    webhooks: (taskId) => `${prefix}:task:${taskId}:webhooks`,
    webhooksDue: `${prefix}:webhooks:due`,
    webhooksPending: `${prefix}:webhooks:pending`,
    webhooksChannel: `${prefix}:webhooks:added`,
    schedule: (scheduleId) => `${prefix}:schedule:${scheduleId}`,
    scheduleRuns: (scheduleId) => `${prefix}:schedule:${scheduleId}:runs`,
    tenantSchedules: (tenant) => `${prefix}:tenant:${tenant}:schedules`,
    schedulesQueue: 'agentq.schedules',
    finishedJobs: (pool, minute) => `${prefix}:pool:${pool}:finished:${minute}`,
    finishedJobsTotal: (pool) => `${prefix}:pool:${pool}:finished`,
    workers: `${prefix}:workers`,
    worker: (workerId) => `${prefix}:worker:${workerId}`,
  };
}

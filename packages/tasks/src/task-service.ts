/**
 * The task service: every way a client changes tasks (submit, retry, bulk retry, fork, cancel,
 * answer, delete), each passing the one admission gate (admission.ts) where it creates work. The API's
 * routes parse a request, call this, and map what it answers; they never reach Redis themselves.
 *
 * What a caller can fix is said before the tenant's limits (a retry of a task that cannot be retried
 * is refused before its tenant's daily limit is read).
 */
import type { TaskStatus } from '@agentq/contract';
import type { AgentQueues } from '@agentq/scheduling';
import {
  createdBytes,
  removeTaskTrees,
  unendedInTrees,
  type RedisMemory,
  type RoomLimits,
  type TaskRecord,
  type TaskStore,
} from '@agentq/store';
import type { Redis } from 'ioredis';
import { Admission } from './admission.js';
import { answerTask } from './answer-task.js';
import { decideApproval, type DecideOutcome } from './decide-approval.js';
import { cancelTask } from './cancel-task.js';
import { ForkError, forkRefusal, forkTask } from './fork-task.js';
import { taskDigest } from './request-digest.js';
import { RETRYABLE, retryTask } from './retry-task.js';
import { assertSigned } from './signed-webhooks.js';
import { submitTasks } from './submit-tasks.js';
import type { ForkInput, TaskInput, WebhookInput } from './task-schemas.js';
import { Transitions, type SubmittedTask } from './transitions.js';

export interface TaskServiceOptions {
  store: TaskStore;
  queues: AgentQueues;
  /** Where a cancel is told to the worker holding the task. */
  publisher: Redis;
  /** What a tenant may have: tasks not ended, stored, bytes written (the configuration's tenants.<t>.limits). */
  room: (tenant: string) => RoomLimits;
  /** Redis's fullness (AGENTQ_REDIS_FULL_PERCENT). */
  redisMemory: RedisMemory;
  /**
   * A tenant's webhook settings (the configuration's tenants.<t>.webhook): its `url` is the default of a
   * task that names none; its `secret`, whether its webhooks can be signed (without one, a task with a
   * webhook is refused: UnsignedWebhookError).
   */
  webhookOf: (tenant: string) => Partial<WebhookInput> & { secret?: string | undefined };
  /** A task's disk quota (AGENTQ_TASK_DISK_MB): a fork of a task whose files pass it is refused; undefined: none. */
  diskQuota: { bytes: number; entries: number } | undefined;
  /** How many of a tenant's tasks with one concurrency key may run at once, at most (limits.perConcurrencyKey). */
  concurrencyLimitOf: (tenant: string) => number;
}

/** A task a bulk action applies to, as a list's summary has it. */
export interface BulkTask {
  id: string;
  tenant: string;
  prompt: string;
  metadata: Record<string, unknown>;
  webhook: { url: string } | null;
}

export type RetryOutcome =
  | { outcome: 'retried'; id: string }
  | { outcome: 'not_retryable'; status: TaskStatus | undefined }
  | { outcome: 'missing' };

export type DeleteOutcome =
  | { outcome: 'deleted' }
  | { outcome: 'subtask'; rootId: string }
  | { outcome: 'unended'; id: string; status: TaskStatus | null };

/** Whether a task can be retried: it failed or was cancelled, and is not a subtask. */
export function retryable(record: Pick<TaskRecord, 'status' | 'parentId'>): boolean {
  return RETRYABLE.has(record.status) && !record.parentId;
}

export class TaskService {
  readonly admission: Admission;
  private readonly transitions: Transitions;

  constructor(private readonly options: TaskServiceOptions) {
    this.admission = new Admission(options);
    this.transitions = new Transitions(options.store);
  }

  /** Whether a tenant's webhooks can be signed: every way a webhook enters a task asks (signed-webhooks.ts). */
  readonly canSign = (tenant: string): boolean => this.options.webhookOf(tenant).secret !== undefined;

  /**
   * Stores and queues a tenant's tasks: all or none (NoRoomError; IdempotencyMismatchError when a task's
   * idempotency key names a live task made from another body); EnqueueError when Redis failed midway.
   */
  async submit(request: {
    tenant: string;
    inputs: readonly TaskInput[];
    batch?: string | undefined;
    traceparents?: readonly string[] | undefined;
    /** About what storing them adds to Redis (the request's size). */
    bytes: number;
    /** The schedule that submits them. */
    scheduleId?: string | undefined;
  }): Promise<SubmittedTask[]> {
    const { tenant, batch, traceparents, scheduleId } = request;
    // What each keyed task's key is bound to: its body as the client sent it, before the defaults below.
    const digests = request.inputs.map((input) =>
      input.idempotencyKey !== undefined ? taskDigest(input, batch) : undefined,
    );
    const settings = this.options.webhookOf(tenant);
    const fallback = settings.url
      ? { url: settings.url, ...(settings.events ? { events: settings.events } : {}) }
      : undefined;
    // A key's limit is the tenant's, or lower where a task asks for less.
    const keyLimit = this.options.concurrencyLimitOf(tenant);
    const inputs = request.inputs.map((input) => {
      const withWebhook = fallback && !input.webhook ? { ...input, webhook: fallback } : input;
      return input.concurrencyKey === undefined
        ? withWebhook
        : { ...withWebhook, concurrencyLimit: Math.min(input.concurrencyLimit ?? keyLimit, keyLimit) };
    });
    assertSigned(
      this.canSign,
      tenant,
      inputs.some((input) => input.webhook !== undefined),
    );
    await this.admission.admit({ tenant, action: 'submit', bytes: request.bytes });
    return submitTasks({
      transitions: this.transitions,
      queues: this.options.queues,
      inputs,
      tenant,
      batch,
      room: this.options.room(tenant),
      ...(traceparents ? { traceparents } : {}),
      digests,
      scheduleId,
    });
  }

  /** A new task that runs `record`'s again (its prompt, model and budget), as its tenant's. */
  async retry(record: TaskRecord): Promise<RetryOutcome> {
    if (!retryable(record)) return { outcome: 'not_retryable', status: record.status };
    assertSigned(this.canSign, record.tenant, Boolean(record.webhookUrl));
    await this.admission.admit({ tenant: record.tenant, action: 'retry' });
    return this.retryAdmitted(record.id);
  }

  /**
   * Retries many tasks (a bulk action's, of any tenants), each tenant's admitted whole before any is
   * made: answers how many were retried.
   */
  async retryMany(tasks: readonly BulkTask[]): Promise<number> {
    for (const task of tasks) assertSigned(this.canSign, task.tenant, task.webhook !== null);
    // Read from the list's summaries, the bytes leave out a given plan's: each retry's CREATE counts them as it stores it.
    const perTenant = new Map<string, { count: number; bytes: number }>();
    for (const task of tasks) {
      const taken = perTenant.get(task.tenant) ?? { count: 0, bytes: 0 };
      perTenant.set(task.tenant, {
        count: taken.count + 1,
        bytes: taken.bytes + createdBytes({ prompt: task.prompt, metadata: JSON.stringify(task.metadata) }),
      });
    }
    for (const [tenant, { count, bytes }] of perTenant)
      await this.admission.admit({ tenant, action: 'retry', tasks: count, bytes });
    let retried = 0;
    for (const { id } of tasks) if ((await this.retryAdmitted(id)).outcome === 'retried') retried++;
    return retried;
  }

  private async retryAdmitted(taskId: string): Promise<RetryOutcome> {
    const result = await retryTask({
      store: this.options.store,
      queues: this.options.queues,
      taskId,
      room: this.options.room,
    });
    if (!result.found) return { outcome: 'missing' };
    return result.newId
      ? { outcome: 'retried', id: result.newId }
      : { outcome: 'not_retryable', status: result.status };
  }

  /** A new task that goes on from one of `source`'s steps; ForkError when it cannot (said before any limit). */
  async fork(source: TaskRecord, input: ForkInput): Promise<{ id: string }> {
    const { diskQuota } = this.options;
    const refusal = forkRefusal(source, input, diskQuota);
    if (refusal) throw new ForkError(refusal);
    await this.admission.admit({ tenant: source.tenant, action: 'fork' });
    return forkTask({
      store: this.options.store,
      queues: this.options.queues,
      source,
      input,
      room: this.options.room(source.tenant),
      ...(diskQuota ? { quota: diskQuota } : {}),
    });
  }

  cancel(taskId: string): Promise<{ found: boolean; status: TaskStatus | undefined }> {
    const { store, queues, publisher } = this.options;
    return cancelTask({ store, queues, publisher, taskId });
  }

  /** Cancels each task; answers how many were found. */
  async cancelMany(taskIds: readonly string[]): Promise<number> {
    let found = 0;
    for (const taskId of taskIds) if ((await this.cancel(taskId)).found) found++;
    return found;
  }

  answer(taskId: string, text: string): Promise<{ found: boolean; status: TaskStatus | undefined; answered: boolean }> {
    return answerTask({ store: this.options.store, queues: this.options.queues, taskId, text });
  }

  /** Decides one call awaiting approval (decide-approval.ts). */
  decide(taskId: string, decision: { callId: string; approve: boolean; reason?: string }): Promise<DecideOutcome> {
    return decideApproval({
      store: this.options.store,
      queues: this.options.queues,
      taskId,
      callId: decision.callId,
      decision: { approve: decision.approve, ...(decision.reason ? { reason: decision.reason } : {}) },
    });
  }

  /** Removes an ended task with its subtasks, all of which must have ended; a subtask goes with its task only. */
  async delete(record: TaskRecord): Promise<DeleteOutcome> {
    if (record.parentId) return { outcome: 'subtask', rootId: record.rootId };
    const [running] = await unendedInTrees(this.options.store, [record.id]);
    if (running) return { outcome: 'unended', id: running.id, status: running.status };
    await removeTaskTrees(this.options.store, [record.id], { workdirsLeft: true });
    return { outcome: 'deleted' };
  }

  /** Removes the ended trees among `rootIds` (one with a subtask not ended yet is left); answers how many. */
  async deleteMany(rootIds: readonly string[], chunk = 500): Promise<number> {
    const unended = await unendedInTrees(this.options.store, rootIds);
    const ended = rootIds.filter((_, index) => !unended[index]);
    for (let start = 0; start < ended.length; start += chunk)
      await removeTaskTrees(this.options.store, ended.slice(start, start + chunk), { workdirsLeft: true });
    return ended.length;
  }
}

/**
 * Every change of a task's status, in one place. Each transition names the statuses it may happen
 * from, what it writes and the event that says so; its arguments are typed (an error's code comes
 * from the contract's union). Nothing else writes a status: the API, the workers and the DAG call
 * these. A transition guarded by a run token is written only while that run still holds the task.
 *
 *   submit ─► queued ─► start ─► running ─► complete | fail | cancel
 *                 ▲                  │ ├──► wait ─► waiting ─► resume | decide ─► queued
 *                 └──── requeue ─────┘ └──► requeue (retry, rate limit, hand-back)
 *   subtasks: addSubtasks | addChildren ─► pending ─► release ─► queued …   pending ─► skip ─► skipped
 *   cancel: from pending, queued, waiting (no job runs) or running (the run records it)
 */
import {
  DEFAULT_WEBHOOK_EVENTS,
  type AgentKind,
  type AgentPool,
  type EventDataMap,
  type TaskError,
  type TaskStatus,
} from '@agentq/contract';
import type { MemoryEntry, Message, TokenUsage } from '@agentq/protocol';
import {
  concurrencyBase,
  DEFAULT_TENANT,
  depthOf,
  newTaskId,
  type CellKeys,
  type Keys,
  webhookOnField,
  type StoredSubtask,
  type TaskRecord,
  type Pending,
  type StepDecisions,
  type CommitOptions,
  type CommitResult,
  type NewTask,
  type StoredEventInput,
  type TaskStore,
  type Room,
} from '@agentq/store';
import { poolOf, storedPlan, type TaskInput } from './task-schemas.js';

/** Which task a transition changes: what it needs of its record. */
export type TaskRef = Pick<TaskRecord, 'id' | 'tenant' | 'listed'>;

/** Who makes the change, for the event's envelope. */
export interface By {
  agent?: string;
  worker?: string;
}

/** A change made by the run that holds the task (its token). */
export interface ByRun extends By {
  runToken: string;
  /**
   * What the run's journal held back to write with its next write (redis-journal.ts): a transition
   * by the run takes it and writes it first, in the same commit.
   */
  takeHeld?: () => HeldWrite | undefined;
  /** What the task's work directory held when the run ended (a fork may not copy more than its quota). */
  workdir?: { bytes: number; entries: number } | undefined;
}

/** The work directory's size, as the record keeps it. */
function workdirFields(options: Partial<ByRun>): Record<string, string> {
  return options.workdir
    ? { workdirBytes: String(options.workdir.bytes), workdirEntries: String(options.workdir.entries) }
    : {};
}

/** Messages and events a run held back, to go out with its next write. */
export interface HeldWrite {
  messages: MemoryEntry[];
  events: StoredEventInput[];
  usage?: TokenUsage;
  steps?: number;
}

/** A run's claim of its task: the task as it was before (when there is one) and its memory. */
export interface Claim extends CommitResult {
  record?: TaskRecord;
  memory: MemoryEntry[];
}

/** Why a running task goes back to the queue. */
export type RequeueReason =
  /** A retryable failure: BullMQ tries the job again (`retry` is the next attempt's number, at `notBefore`). */
  | { kind: 'retry'; retry: number; message: string; notBefore?: string }
  /** The model's shared limits (models.<model>.limits) are used up: the job waits until `notBefore`, when the call fits. */
  | { kind: 'rate_limited'; message: string; notBefore: string }
  /**
   * Its model's endpoint cannot be reached, or (`rateLimited`) answered its tenant 429: the job waits,
   * spending no attempt, until `notBefore` at the latest. The task has waited since `since` (ms), in the
   * outage that began at `outage` (ms).
   */
  | {
      kind: 'model_unreachable';
      message: string;
      notBefore: string;
      since: number;
      outage: number;
      rateLimited?: boolean;
    }
  /** Its worker is shutting down; another resumes it. */
  | { kind: 'handed_back' };

/** A submitted task: new, or (`existing`) the live task its idempotency key named, with that one's status. */
export interface SubmittedTask {
  id: string;
  agent: AgentPool;
  priority: number;
  existing?: TaskStatus;
}

export class Transitions {
  constructor(readonly store: TaskStore) {}

  /**
   * New submitted tasks, `queued`; a task whose idempotency key names one already answers that one.
   * `traceparents`: each task's trace context (with tracing on), in the order of `inputs`.
   */
  async submit(
    inputs: readonly TaskInput[],
    options: {
      tenant: string;
      batch?: string | undefined;
      traceparents?: readonly string[];
      /** Each task's body's digest (request-digest.ts), in the order of `inputs`: kept with its idempotency key. */
      digests?: ReadonlyArray<string | undefined>;
      room?: Room;
      /** The schedule that submits them. */
      scheduleId?: string | undefined;
      /** Called once their CREATE calls are on their way (store.create), with the tasks' ids and pools. */
      onSent?: (tasks: ReadonlyArray<{ id: string; pool: AgentPool }>) => void;
    },
  ): Promise<SubmittedTask[]> {
    return this.createSubmitted(
      inputs.map((input, index) =>
        submittedTask(input, {
          keys: this.store.keys,
          tenant: options.tenant,
          batch: options.batch,
          traceparent: options.traceparents?.[index],
          digest: options.digests?.[index],
          scheduleId: options.scheduleId,
        }),
      ),
      options.room,
      options.onSent,
    );
  }

  /**
   * A fork of `source`: a new submitted task (its tenant's and batch's) that starts from the source's
   * steps before `fromStep` (its first run copies them), then goes on with its own prompt, model and agent.
   */
  async fork(
    source: Pick<TaskRecord, 'id' | 'tenant' | 'batch'>,
    input: TaskInput & { agent: AgentKind; fromStep: number },
    room?: Room,
  ): Promise<SubmittedTask> {
    const task = submittedTask(input, { keys: this.store.keys, tenant: source.tenant, batch: source.batch });
    task.fields.forkOf = source.id;
    task.fields.forkStep = String(input.fromStep);
    task.event = {
      type: 'task.queued',
      agent: task.waiting.pool,
      data: { priority: task.waiting.priority, forkOf: source.id, fromStep: input.fromStep },
    };
    const [created] = await this.createSubmitted([task], room);
    return created!;
  }

  /**
   * Each new task joins its tenant's list for its pool as it is stored: a turn of admission gives it its
   * job. With `room`, only if they fit in the tenant's limits (else NoRoomError, nothing stored).
   */
  private async createSubmitted(
    tasks: readonly SubmittedNewTask[],
    room?: Room,
    onSent?: (tasks: ReadonlyArray<{ id: string; pool: AgentPool }>) => void,
  ): Promise<SubmittedTask[]> {
    const sent = onSent && (() => onSent(tasks.map((task) => ({ id: task.fields.id, pool: task.waiting.pool }))));
    const created = await this.store.create(tasks, room, sent);
    return created.map((result, index) => ({
      id: result.id,
      agent: tasks[index]!.waiting.pool,
      priority: tasks[index]!.waiting.priority,
      ...(result.outcome === 'existing' ? { existing: result.status } : {}),
    }));
  }

  /** The subtasks of a (re)plan, `pending` until what they need has completed; `traceparent`: the trace they continue. */
  async addSubtasks(root: TaskRecord, subtasks: readonly StoredSubtask[], traceparent?: string): Promise<void> {
    const now = new Date().toISOString();
    await this.store.create(
      subtasks.map((subtask) => ({
        fields: {
          id: subtask.taskId,
          rootId: root.id,
          parentId: root.id,
          tenant: root.tenant,
          planId: subtask.id,
          agent: subtask.agent,
          prompt: subtask.task,
          priority: String(root.priority),
          needs: JSON.stringify(subtask.need.map((need) => subtasks.find((other) => other.id === need)!.taskId)),
          ...(traceparent ? { traceparent } : {}),
          // Its spending adds up at the root, whose budget it draws on; it runs on the model the root named.
          ...(root.budgeted ? { budgeted: '1' } : {}),
          ...(root.pinnedModel && root.model ? { model: root.model, pinnedModel: '1' } : {}),
          // It is tried again as its root's submit asked (within its own agent's most attempts).
          ...retryFields({ attempts: root.retryAttempts, backoff: root.retryBackoff }),
          // Its root's files are placed in its folder too.
          ...(root.inputs ? { inputs: String(root.inputs) } : {}),
          status: 'pending',
          memory: '0',
          createdAt: now,
        },
      })),
    );
  }

  /**
   * A run takes hold of its task: `running` under its new token, and the task read in the same round
   * trip (its record before the claim, and its memory). `tenant` is the task's, from its job; a job
   * without one (queued by an older version) has its task read first. Says nothing itself: the run
   * says `task.started` with its first write.
   */
  async claim(
    task: { id: string; tenant?: string | undefined },
    /** `job`: the claiming job's id, when it must be the task's current job (the record's `jobId`). */
    options: ByRun & { model?: string; job?: string | undefined },
  ): Promise<Claim> {
    const tenant = task.tenant ?? (await this.store.getRecord(task.id))?.tenant;
    const result = await this.store.commitAndRead({
      taskId: task.id,
      // A task that is gone answers `missing` before its tenant is looked at.
      tenant: tenant ?? DEFAULT_TENANT,
      expect: ['queued', 'running'],
      ...(options.job ? { expectJob: options.job } : {}),
      status: 'running',
      fields: { worker: options.worker ?? '', runToken: options.runToken },
      // Its events are held from now on, for its end commit to pack them (run-events.ts).
      holdEventsFor: options.runToken,
      // The model it runs on: named on submit, else its first run's (a resumed run keeps it).
      firstTime: { startedAt: new Date().toISOString(), ...(options.model ? { model: options.model } : {}) },
    });
    return { ...result, memory: result.memory ?? [] };
  }

  complete(
    task: TaskRef,
    options: ByRun & { result: string; steps?: number; subtasks?: number },
  ): Promise<CommitResult> {
    const { result, steps, subtasks } = options;
    return this.change(task, {
      runToken: options.runToken,
      takeHeld: options.takeHeld,
      expect: ['running'],
      status: 'completed',
      fields: { finishedAt: new Date().toISOString(), result, ...workdirFields(options) },
      events: [
        {
          type: 'task.completed',
          ...by(options),
          data: { result, ...(steps !== undefined ? { steps } : {}), ...(subtasks !== undefined ? { subtasks } : {}) },
        },
      ],
    });
  }

  /**
   * The task fails with `error`. By its run (`runToken`, from `running`), or from outside it: a job
   * BullMQ gave up on, a submission that could not be queued (`from`).
   */
  fail(
    task: TaskRef,
    options: By & Partial<ByRun> & { error: TaskError; from?: readonly TaskStatus[]; result?: string; steps?: number },
  ): Promise<CommitResult> {
    const { error, steps } = options;
    return this.change(task, {
      ...(options.runToken ? { runToken: options.runToken, takeHeld: options.takeHeld } : {}),
      expect: options.from ?? ['running'],
      status: 'failed',
      fields: {
        finishedAt: new Date().toISOString(),
        error: JSON.stringify(error),
        ...(options.result !== undefined ? { result: options.result } : {}),
        ...workdirFields(options),
      },
      events: [{ type: 'task.failed', ...by(options), data: { error, ...(steps !== undefined ? { steps } : {}) } }],
    });
  }

  /** The task ends cancelled: by its run, which stopped at a cancel, or from a status where no job runs. */
  cancel(
    task: TaskRef,
    options: By & Partial<ByRun> & { from: readonly TaskStatus[]; reason?: string; steps?: number },
  ): Promise<CommitResult> {
    const { reason, steps } = options;
    return this.change(task, {
      ...(options.runToken ? { runToken: options.runToken, takeHeld: options.takeHeld } : {}),
      expect: options.from,
      status: 'cancelled',
      fields: { finishedAt: new Date().toISOString(), ...workdirFields(options) },
      events: [
        {
          type: 'task.cancelled',
          ...by(options),
          data: { ...(reason ? { reason } : {}), ...(steps !== undefined ? { steps } : {}) },
        },
      ],
    });
  }

  /**
   * `waiting`: the model asked the user something (with how the answer must be written back), or calls
   * of a step wait for a person's approval.
   */
  wait(task: TaskRef, options: ByRun & { pending: Pending; steps: number }): Promise<CommitResult> {
    const { pending } = options;
    return this.change(task, {
      runToken: options.runToken,
      takeHeld: options.takeHeld,
      expect: ['running'],
      status: 'waiting',
      fields: { pending: JSON.stringify(pending), ...workdirFields(options) },
      events: [{ type: 'task.waiting', ...by(options), data: { ...waitingData(pending), steps: options.steps } }],
    });
  }

  /**
   * One call awaiting approval decided (`decisions`: the step's, this one included), written only if
   * nothing changed the task since the caller read it at `seq`. With `resume`, the last one: the task is
   * queued again (as job `jobId`, which the caller adds while `lease` holds) and runs what was decided.
   */
  decide(
    task: TaskRef,
    options: {
      seq: number;
      decisions: StepDecisions;
      call: { id: string; name: string };
      resume?: { jobId: string; resumes: number; lease: { key: string; ms: number } };
    },
  ): Promise<CommitResult> {
    const decision = options.decisions.calls.get(options.call.id)!;
    const { resume } = options;
    return this.change(task, {
      expect: ['waiting'],
      expectSeq: options.seq,
      fields: {
        decisions: JSON.stringify({ step: options.decisions.step, calls: [...options.decisions.calls] }),
        ...(resume ? { jobId: resume.jobId, resumes: String(resume.resumes), pending: '' } : {}),
      },
      ...(resume ? { status: 'queued' as const, lease: resume.lease } : {}),
      events: [
        { type: 'approval.decided', data: { id: options.call.id, name: options.call.name, ...decision } },
        ...(resume
          ? [{ type: 'task.queued' as const, data: { reason: 'every call awaiting approval is decided' } }]
          : []),
      ],
    });
  }

  /**
   * A running task goes back to the queue, and says why; its next run resumes from its journal. With
   * `next`, its run must wait: the task is due in its pool's due set after `due.ms`, to run as job
   * `jobId` (due-tasks.ts); `retries`: its failed runs so far, when one more failed. `rateLimits`: the
   * 429s in a row its model answered it, kept for its next run to count on.
   */
  requeue(
    task: TaskRef,
    options: ByRun & {
      why: RequeueReason;
      rateLimits?: number;
      next?: {
        jobId: string;
        resumes: number;
        retries?: number;
        due: { key: string; runsKey: string; ms: number; member: string };
      };
    },
  ): Promise<CommitResult> {
    const { why, next } = options;
    const data =
      why.kind === 'retry'
        ? { retry: why.retry, reason: why.message, ...(why.notBefore ? { notBefore: why.notBefore } : {}) }
        : why.kind === 'rate_limited' || (why.kind === 'model_unreachable' && why.rateLimited)
          ? { reason: why.message, rateLimited: true, notBefore: why.notBefore }
          : why.kind === 'model_unreachable'
            ? { reason: why.message, modelUnreachable: true, notBefore: why.notBefore }
            : { reason: 'its worker shut down; it resumes on another' };
    return this.change(task, {
      runToken: options.runToken,
      takeHeld: options.takeHeld,
      expect: ['running'],
      status: 'queued',
      fields: {
        // How long it has waited for its model's endpoint, for the window (models.<model>.outage) to count.
        ...(why.kind === 'model_unreachable'
          ? { outageSince: String(why.since), outageEpisode: String(why.outage) }
          : {}),
        ...(options.rateLimits !== undefined ? { rateLimits: String(options.rateLimits) } : {}),
        ...(next
          ? {
              jobId: next.jobId,
              resumes: String(next.resumes),
              ...(next.retries !== undefined ? { retries: String(next.retries) } : {}),
            }
          : {}),
      },
      ...(next ? { due: { ...next.due, jobId: next.jobId } } : {}),
      events: [{ type: 'task.queued', ...by(options), data }],
    });
  }

  /**
   * A waiting task's interrupt is satisfied (its user's answer, its children's results): `message`
   * answers the call that paused it and completes that step, and the task is queued again (as job
   * `jobId`, which the caller adds while `lease` holds: FairAdmission.leaseOf). With `seq`, only if
   * nothing changed the task since its caller read it. `why`: what the `task.queued` event says.
   */
  resume(
    task: TaskRef,
    options: {
      message: Message;
      step: number;
      jobId: string;
      resumes: number;
      lease: { key: string; ms: number };
      seq?: number;
      why: { answer: string } | { children: Array<{ id: string; status: string }> };
    },
  ): Promise<CommitResult> {
    return this.change(task, {
      lease: options.lease,
      expect: ['waiting'],
      ...(options.seq !== undefined ? { expectSeq: options.seq } : {}),
      status: 'queued',
      fields: { jobId: options.jobId, resumes: String(options.resumes), pending: '' },
      messages: [options.message],
      steps: options.step,
      events: [
        { type: 'step.completed', step: options.step, data: { step: options.step } },
        { type: 'task.queued', data: options.why },
      ],
    });
  }

  /**
   * Children a `delegate` call of `parent`'s run starts, `pending` until `release` queues them: each made
   * once (its id is keyed by the call), so a run that calls again after a crash makes none twice.
   */
  async addChildren(
    parent: TaskRecord,
    children: ReadonlyArray<{
      id: string;
      agent: string;
      prompt: string;
      inputs?: Array<{ path: string; content: Buffer }>;
    }>,
    /** The tenant's room: what the children store is held to its `limits.mb` (else NoRoomError, nothing made). */
    room?: Room,
  ): Promise<Array<{ id: string; outcome: 'created' | 'existing' }>> {
    const now = new Date().toISOString();
    return this.store.create(
      children.map((child) => ({
        once: true,
        fields: {
          id: child.id,
          rootId: parent.rootId,
          parentId: parent.id,
          depth: String(depthOf(parent) + 1),
          tenant: parent.tenant,
          agent: child.agent,
          prompt: child.prompt,
          priority: String(parent.priority),
          ...(parent.traceparent ? { traceparent: parent.traceparent } : {}),
          // It spends from its root's budget, on the model its root named, tried again as its root asked.
          ...(parent.budgeted ? { budgeted: '1' } : {}),
          ...(parent.pinnedModel && parent.model ? { model: parent.model, pinnedModel: '1' } : {}),
          ...retryFields({ attempts: parent.retryAttempts, backoff: parent.retryBackoff }),
          ...(child.inputs?.length ? { inputs: String(child.inputs.length), inputsOf: child.id } : {}),
          ...(parent.batch !== undefined ? { batch: parent.batch } : {}),
          status: 'pending',
          memory: '0',
          createdAt: now,
        },
        ...(child.inputs?.length ? { inputs: child.inputs } : {}),
      })),
      room,
    );
  }

  /** A pending subtask whose needs completed: `queued`. */
  release(subtask: TaskRef): Promise<CommitResult> {
    return this.change(subtask, { expect: ['pending'], status: 'queued', events: [{ type: 'task.queued', data: {} }] });
  }

  /** A pending subtask one of whose needs did not complete: `skipped`, and why. */
  skip(subtask: TaskRef, options: By & { reason: string }): Promise<CommitResult> {
    const error: TaskError = { code: 'needs_failed', message: options.reason };
    return this.change(subtask, {
      expect: ['pending'],
      status: 'skipped',
      fields: { error: JSON.stringify(error), finishedAt: new Date().toISOString() },
      events: [{ type: 'task.failed', ...by(options), data: { skipped: true, reason: options.reason } }],
    });
  }

  /** Marks a task not ended yet as to be cancelled (its run stops at its next commit). No status change. */
  requestCancel(task: TaskRef): Promise<CommitResult> {
    return this.change(task, { expect: ['pending', 'queued', 'running', 'waiting'], fields: { cancelRequested: '1' } });
  }

  private change(
    task: TaskRef,
    options: Omit<CommitOptions, 'taskId' | 'tenant'> & { takeHeld?: ByRun['takeHeld'] },
  ): Promise<CommitResult> {
    const { takeHeld, ...change } = options;
    const held = takeHeld?.();
    // What the run held back goes first, in the same commit.
    const joined =
      held &&
      joinWrites(held, {
        messages: [...(change.messages ?? [])],
        events: [...(change.events ?? [])],
        ...(change.usage ? { usage: change.usage } : {}),
        ...(change.steps !== undefined ? { steps: change.steps } : {}),
      });
    return this.store.commit({
      ...change,
      ...joined,
      taskId: task.id,
      tenant: task.tenant,
    });
  }
}

/** Two writes as one, the first's messages and events first; usage adds up, the later step count wins. */
export function joinWrites(first: HeldWrite | undefined, then: HeldWrite): HeldWrite {
  if (!first) return then;
  const usage =
    first.usage && then.usage
      ? {
          promptTokens: first.usage.promptTokens + then.usage.promptTokens,
          completionTokens: first.usage.completionTokens + then.usage.completionTokens,
        }
      : (then.usage ?? first.usage);
  const steps = then.steps ?? first.steps;
  return {
    messages: [...first.messages, ...then.messages],
    events: [...first.events, ...then.events],
    ...(usage ? { usage } : {}),
    ...(steps !== undefined ? { steps } : {}),
  };
}

/** A new submitted task: ready to run, so it waits in its tenant's list for its pool. */
type SubmittedNewTask = NewTask & { waiting: { pool: AgentPool; priority: number }; fields: Record<string, string> };

/** A new submitted task, `queued`, from what the client asked for. */
function submittedTask(
  input: TaskInput,
  options: {
    keys: Keys;
    tenant: string;
    batch?: string | undefined;
    traceparent?: string | undefined;
    digest?: string | undefined;
    scheduleId?: string | undefined;
  },
): SubmittedNewTask {
  const key = input.concurrencyKey;
  const { keys } = options;
  const id = newTaskId(keys, keyCell(keys, options.tenant, input));
  const agent = poolOf(input);
  const priority = input.priority ?? 5;
  return {
    waiting: { pool: agent, priority },
    ...(key !== undefined ? { gated: { base: concurrencyBase(options.tenant, key) } } : {}),
    fields: {
      id,
      rootId: id,
      tenant: options.tenant,
      agent,
      prompt: input.prompt,
      priority: String(priority),
      ...(input.metadata ? { metadata: JSON.stringify(input.metadata) } : {}),
      ...(options.traceparent ? { traceparent: options.traceparent } : {}),
      ...(options.batch !== undefined ? { batch: options.batch } : {}),
      ...(options.scheduleId !== undefined ? { scheduleId: options.scheduleId } : {}),
      ...(input.model !== undefined ? { model: input.model, pinnedModel: '1' } : {}),
      ...(input.plan ? { givenPlan: storedPlan(input.plan) } : {}),
      ...(input.files ? { inputs: String(input.files.length) } : {}),
      ...(input.webhook
        ? {
            webhookUrl: input.webhook.url,
            webhookOn: webhookOnField(input.webhook.events ?? DEFAULT_WEBHOOK_EVENTS),
          }
        : {}),
      ...budgetFields(input.budget),
      ...retryFields(input.retry),
      ...(key !== undefined
        ? { concurrencyKey: key, concurrencyLimit: String(input.concurrencyLimit ?? 1), gated: '1' }
        : {}),
      status: 'queued',
      // Steps and token counts start absent (a missing one reads 0): fewer fields for every submit.
      memory: '0',
      createdAt: new Date().toISOString(),
    },
    listed: { tenant: options.tenant, ...(options.batch !== undefined ? { batch: options.batch } : {}) },
    event: { type: 'task.queued', agent, data: { priority, ...(key !== undefined ? { concurrencyKey: key } : {}) } },
    ...(input.files ? { inputs: input.files } : {}),
    ...(input.idempotencyKey !== undefined
      ? {
          idempotencyKey: input.idempotencyKey,
          ...(options.digest !== undefined ? { idempotencyDigest: options.digest } : {}),
        }
      : {}),
  };
}

/**
 * The cell a submitted task with a key lives in (its idempotency key too): a concurrency key's first,
 * else an idempotency key's; undefined for a task without a key (any cell).
 */
export function keyCell(
  keys: Keys,
  tenant: string,
  input: Pick<TaskInput, 'concurrencyKey' | 'idempotencyKey'>,
): CellKeys | undefined {
  const key = input.concurrencyKey ?? input.idempotencyKey;
  return key !== undefined ? keys.cellOfKey(concurrencyBase(tenant, key)) : undefined;
}

/** A submitted task's retry policy, as its record keeps it (what it leaves out is its agent's). */
function retryFields(retry: TaskInput['retry']): Record<string, string> {
  return {
    ...(retry?.attempts !== undefined ? { retryAttempts: String(retry.attempts) } : {}),
    ...(retry?.backoff !== undefined ? { retryBackoff: String(retry.backoff) } : {}),
  };
}

/** A submitted task's budget, as its record keeps it (cost in micro-USD, whole numbers). */
function budgetFields(budget: TaskInput['budget']): Record<string, string> {
  if (!budget) return {};
  return {
    budgeted: '1',
    ...(budget.usd !== undefined ? { budgetMicroUsd: String(Math.round(budget.usd * 1_000_000)) } : {}),
    ...(budget.tokens !== undefined ? { budgetTokens: String(budget.tokens) } : {}),
  };
}

/**
 * What a `task.waiting` event says of each kind of interrupt: a kind added to Pending is a compile error
 * here until it says.
 */
const WAITING_DATA: {
  [Kind in NonNullable<Pending['kind']>]: (
    pending: Extract<Pending, { kind?: Kind }>,
  ) => Omit<EventDataMap['task.waiting'], 'steps'>;
} = {
  question: (pending) => ({ question: pending.question }),
  approval: (pending) => ({ approvals: pending.calls, ...(pending.expiresAt ? { expiresAt: pending.expiresAt } : {}) }),
  children: (pending) => ({ children: pending.children }),
};

function waitingData(pending: Pending): Omit<EventDataMap['task.waiting'], 'steps'> {
  return (
    WAITING_DATA[pending.kind ?? 'question'] as (pending: Pending) => Omit<EventDataMap['task.waiting'], 'steps'>
  )(pending);
}

function by(options: By): By {
  return { ...(options.agent ? { agent: options.agent } : {}), ...(options.worker ? { worker: options.worker } : {}) };
}

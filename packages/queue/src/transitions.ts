/**
 * Every change of a task's status, in one place. Each transition names the statuses it may happen
 * from, what it writes and the event that says so; its arguments are typed (an error's code comes
 * from the contract's union). Nothing else writes a status: the API, the workers and the DAG call
 * these. A transition guarded by a run token is written only while that run still holds the task.
 *
 *   submit ─► queued ─► start ─► running ─► complete | fail | cancel
 *                 ▲                  │ ├──► wait ─► waiting ─► answer ─► queued
 *                 └──── requeue ─────┘ └──► requeue (retry, rate limit, hand-back)
 *   subtasks: addSubtasks ─► pending ─► release ─► queued …   pending ─► skip ─► skipped
 *   cancel: from pending, queued, waiting (no job runs) or running (the run records it)
 */
import { randomUUID } from 'node:crypto';
import type { AgentPool, TaskError, TaskStatus } from '@agentq/contract';
import type { Message } from '@agentq/protocol';
import type { StoredSubtask, TaskRecord } from './task-record.js';
import { DEFAULT_POOL, type PendingQuestion, type TaskInput } from './task-schemas.js';
import type { CommitOptions, CommitResult, NewTask, TaskStore } from './task-store.js';

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
}

/** Why a running task goes back to the queue. */
export type RequeueReason =
  /** A retryable failure: BullMQ tries the job again (`retry` is the next attempt's number). */
  | { kind: 'retry'; retry: number; message: string }
  /** The model endpoint is rate limited: the pool pauses. */
  | { kind: 'rate_limited'; message: string }
  /** Its worker is shutting down; another resumes it. */
  | { kind: 'handed_back' };

export class Transitions {
  constructor(readonly store: TaskStore) {}

  /** New submitted tasks, `queued`; a task whose idempotency key names one already answers that one. */
  async submit(inputs: readonly TaskInput[], options: { tenant: string }): Promise<Array<{ id: string; agent: AgentPool; priority: number; existing?: TaskStatus }>> {
    const { store } = this;
    const lastOrder = await store.redis.incrby(store.keys.orderCounter, inputs.length);
    const now = new Date().toISOString();
    const tasks = inputs.map((input, index): NewTask & { agent: AgentPool; priority: number } => {
      const id = randomUUID();
      const agent = input.agent ?? DEFAULT_POOL;
      const priority = input.priority ?? 5;
      return {
        agent,
        priority,
        fields: {
          id,
          rootId: id,
          tenant: options.tenant,
          agent,
          prompt: input.prompt,
          priority: String(priority),
          metadata: JSON.stringify(input.metadata ?? {}),
          status: 'queued',
          steps: '0',
          promptTokens: '0',
          completionTokens: '0',
          createdAt: now,
        },
        listed: { tenant: options.tenant, order: lastOrder - inputs.length + index + 1 },
        event: { type: 'task.queued', agent, data: { priority } },
        ...(input.idempotencyKey !== undefined ? { idempotencyKey: input.idempotencyKey } : {}),
      };
    });
    const created = await store.create(tasks);
    return created.map((result, index) => ({
      id: result.id,
      agent: tasks[index]!.agent,
      priority: tasks[index]!.priority,
      ...(result.outcome === 'existing' ? { existing: result.status } : {}),
    }));
  }

  /** The subtasks of a (re)plan, `pending` until what they need has completed. */
  async addSubtasks(root: TaskRecord, subtasks: readonly StoredSubtask[]): Promise<void> {
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
          metadata: '{}',
          needs: JSON.stringify(subtask.need.map((need) => subtasks.find((other) => other.id === need)!.taskId)),
          status: 'pending',
          steps: '0',
          promptTokens: '0',
          completionTokens: '0',
          createdAt: now,
        },
      })),
    );
  }

  /** A run takes hold of the task: `running` under its new token (`announce`: say so in an event). */
  start(task: TaskRef & Pick<TaskRecord, 'startedAt'>, options: ByRun & { attempt: number; resumed: boolean; announce?: boolean }): Promise<CommitResult> {
    return this.change(task, {
      expect: ['queued', 'running'],
      status: 'running',
      fields: { ...(task.startedAt ? {} : { startedAt: new Date().toISOString() }), worker: options.worker ?? '', runToken: options.runToken },
      ...(options.announce === false ? {} : { events: [{ type: 'task.started', ...by(options), data: { attempt: options.attempt, resumed: options.resumed } }] }),
    });
  }

  complete(task: TaskRef, options: ByRun & { result: string; steps?: number; subtasks?: number }): Promise<CommitResult> {
    const { result, steps, subtasks } = options;
    return this.change(task, {
      runToken: options.runToken,
      expect: ['running'],
      status: 'completed',
      fields: { finishedAt: new Date().toISOString(), result },
      events: [{ type: 'task.completed', ...by(options), data: { result, ...(steps !== undefined ? { steps } : {}), ...(subtasks !== undefined ? { subtasks } : {}) } }],
    });
  }

  /**
   * The task fails with `error`. By its run (`runToken`, from `running`), or from outside it: a job
   * BullMQ gave up on, a submission that could not be queued (`from`).
   */
  fail(task: TaskRef, options: By & { error: TaskError; runToken?: string; from?: readonly TaskStatus[]; result?: string; steps?: number }): Promise<CommitResult> {
    const { error, steps } = options;
    return this.change(task, {
      ...(options.runToken ? { runToken: options.runToken } : {}),
      expect: options.from ?? ['running'],
      status: 'failed',
      fields: { finishedAt: new Date().toISOString(), error: JSON.stringify(error), ...(options.result !== undefined ? { result: options.result } : {}) },
      events: [{ type: 'task.failed', ...by(options), data: { error, ...(steps !== undefined ? { steps } : {}) } }],
    });
  }

  /** The task ends cancelled: by its run, which stopped at a cancel, or from a status where no job runs. */
  cancel(task: TaskRef, options: By & { from: readonly TaskStatus[]; runToken?: string; reason?: string; steps?: number }): Promise<CommitResult> {
    const { reason, steps } = options;
    return this.change(task, {
      ...(options.runToken ? { runToken: options.runToken } : {}),
      expect: options.from,
      status: 'cancelled',
      fields: { finishedAt: new Date().toISOString() },
      events: [{ type: 'task.cancelled', ...by(options), data: { ...(reason ? { reason } : {}), ...(steps !== undefined ? { steps } : {}) } }],
    });
  }

  /** The model asked the user something: `waiting`, with how the answer must be written back. */
  wait(task: TaskRef, options: ByRun & { pending: PendingQuestion; steps: number }): Promise<CommitResult> {
    return this.change(task, {
      runToken: options.runToken,
      expect: ['running'],
      status: 'waiting',
      fields: { pending: JSON.stringify(options.pending) },
      events: [{ type: 'task.waiting', ...by(options), data: { question: options.pending.question, steps: options.steps } }],
    });
  }

  /** A running task goes back to the queue, and says why; its next run resumes from its journal. */
  requeue(task: TaskRef, options: ByRun & { why: RequeueReason }): Promise<CommitResult> {
    const { why } = options;
    const data =
      why.kind === 'retry'
        ? { retry: why.retry, reason: why.message }
        : why.kind === 'rate_limited'
          ? { reason: why.message, rateLimited: true }
          : { reason: 'its worker shut down; it resumes on another' };
    return this.change(task, { runToken: options.runToken, expect: ['running'], status: 'queued', events: [{ type: 'task.queued', ...by(options), data }] });
  }

  /**
   * The user's answer to a waiting task: it goes into memory the way the question was asked, the
   * step that asked completes, and the task is queued again (as job `jobId`).
   */
  answer(task: TaskRef, options: { text: string; message: Message; step: number; jobId: string; resumes: number }): Promise<CommitResult> {
    return this.change(task, {
      expect: ['waiting'],
      status: 'queued',
      fields: { jobId: options.jobId, resumes: String(options.resumes), pending: '' },
      messages: [options.message],
      steps: options.step,
      events: [
        { type: 'step.completed', step: options.step, data: { step: options.step } },
        { type: 'task.queued', data: { answer: options.text } },
      ],
    });
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

  private change(task: TaskRef, options: Omit<CommitOptions, 'taskId' | 'tenant'>): Promise<CommitResult> {
    return this.store.commit({ ...options, taskId: task.id, ...(task.listed ? { tenant: task.tenant } : {}) });
  }
}

function by(options: By): By {
  return { ...(options.agent ? { agent: options.agent } : {}), ...(options.worker ? { worker: options.worker } : {}) };
}

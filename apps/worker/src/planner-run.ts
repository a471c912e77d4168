/**
 * What the planner's jobs share: taking hold of the root task (a run token, so a stale job cannot
 * write), its journal, and the cancel signal.
 */
import type { TaskError } from '@agentq/contract';
import { randomUUID } from 'node:crypto';
import type { AgentJournal } from '@agentq/core';
import { LlmError } from '@agentq/llm';
import { DelayedError, type Job } from 'bullmq';
import { createRedisJournal, type TaskStore } from '@agentq/queue';
import type { CancelListener } from './cancel-listener.js';
import { pausePool } from './pause-pool.js';

export interface PlannerRun {
  runToken: string;
  journal: AgentJournal;
  signal: AbortSignal;
  release(): void;
}

/** Marks the root running under a new run token; undefined when it is no longer the planner's to run. */
export async function holdRoot(options: {
  store: TaskStore;
  cancels: CancelListener;
  taskId: string;
  workerId: string;
  record: Record<string, string>;
  attempt: number;
}): Promise<PlannerRun | undefined> {
  const { store, taskId, workerId, record } = options;
  const runToken = randomUUID();
  const held = await store.commit({
    taskId,
    expect: ['queued', 'running'],
    status: 'running',
    fields: { ...(record.startedAt ? {} : { startedAt: new Date().toISOString() }), worker: workerId, runToken },
    ...(record.status === 'queued' ? { events: [{ type: 'task.started' as const, agent: 'planner', worker: workerId, data: { attempt: options.attempt, resumed: Boolean(record.startedAt) } }] } : {}),
  });
  if (!held.applied) return undefined;
  const { controller, release } = options.cancels.register(taskId);
  const journal = createRedisJournal({
    store,
    taskId,
    agent: 'planner',
    worker: workerId,
    runToken,
    onCommit: (_entry, { cancelRequested }) => {
      if (cancelRequested) controller.abort(new Error('cancelled'));
    },
  });
  return { runToken, journal, signal: controller.signal, release };
}

/**
 * A model error the planner cannot get past by trying again (400/401/403/404) fails the task at once;
 * a 429 pauses the pool; anything else is thrown again, for BullMQ to retry the job.
 */
export async function failOnModelError(options: {
  store: TaskStore;
  taskId: string;
  run: PlannerRun;
  workerId: string;
  error: unknown;
  rateLimit: (ms: number) => Promise<void>;
}): Promise<string> {
  const { error } = options;
  if (error instanceof LlmError && error.code === 'rate_limited') return pausePool(error, options.rateLimit);
  if (!(error instanceof LlmError) || error.retryable || error.code === 'aborted') throw error;
  const failure: TaskError = { code: 'error', message: error.message };
  await options.store.commit({
    taskId: options.taskId,
    runToken: options.run.runToken,
    expect: ['running'],
    status: 'failed',
    fields: { error: JSON.stringify(failure), finishedAt: new Date().toISOString() },
    events: [{ type: 'task.failed', agent: 'planner', worker: options.workerId, data: { error: failure } }],
  });
  return 'failed';
}

/** A planner job stopped by its worker's shutdown goes back to the queue, without using an attempt. */
export async function requeueIfInterrupted(options: { cancels: CancelListener; job: Job; token: string | undefined }): Promise<void> {
  if (!options.cancels.interrupted) return;
  await options.job.moveToDelayed(Date.now(), options.token);
  throw new DelayedError();
}

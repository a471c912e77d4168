/**
 * The one place that decides how a job's run ends, whatever the job (an agent's task, a plan, a
 * planned task's end). A run holds its task under a new run token (a stale run can write nothing),
 * with the task's journal and an abort signal. Then:
 *
 * - stopped by this worker's shutdown (the signal's reason): the task goes back to the queue and the
 *   job is delayed, without using an attempt; another worker resumes it from its journal;
 * - a 429 that outlasted the SDK's retries: the task goes back to the queue and the whole pool pauses
 *   (BullMQ's rate limit, every worker of it on every machine), without using an attempt;
 * - another error: back to the queue for BullMQ to try again with backoff, or, at the last attempt,
 *   `gave_up` for the caller to record the failure;
 * - otherwise what the run answered (a cancel included) is the caller's to record.
 */
import { randomUUID } from 'node:crypto';
import { DelayedError, RateLimitError, type Job } from 'bullmq';
import type { AgentJournal } from '@agentq/core';
import { LlmError } from '@agentq/llm';
import { createRedisJournal, type ByRun, type TaskRecord } from '@agentq/queue';
import { CANCELLED, stoppedByShutdown } from './cancel-listener.js';
import type { JobContext } from './job-context.js';

/** How long a pool pauses when the provider gave no Retry-After. */
const DEFAULT_RATE_LIMIT_MS = 5_000;

export interface HeldTask {
  by: ByRun;
  journal: AgentJournal;
  signal: AbortSignal;
}

/** How the run ended; `by` is the run (its token) that the caller records the outcome as. */
export type RunEnd<T> = { ended: 'ran'; value: T; by: ByRun } | { ended: 'gave_up'; message: string; by: ByRun } | { ended: 'not_held' };

export async function holdTask<T>(options: {
  job: Job;
  token: string | undefined;
  context: JobContext;
  record: TaskRecord;
  agent: string;
  /** Whether this run continues one that began before (for the `task.started` event). */
  resumed: boolean;
  /** Say `task.started`. Default true. */
  announce?: boolean;
  run: (held: HeldTask) => Promise<T>;
}): Promise<RunEnd<T>> {
  const { job, context, record } = options;
  const by: ByRun = { runToken: randomUUID(), agent: options.agent, worker: context.workerId };
  const started = await context.transitions.start(record, { ...by, attempt: job.attemptsMade + 1, resumed: options.resumed, announce: options.announce ?? true });
  // The task moved on meanwhile (cancelled, waiting for its user, ended): nothing to run.
  if (!started.applied) return { ended: 'not_held' };
  const { controller, release } = context.cancels.register(record.id);
  const journal = createRedisJournal({
    store: context.store,
    taskId: record.id,
    agent: options.agent,
    worker: context.workerId,
    runToken: by.runToken,
    onCommit: (entry, { cancelRequested }) => {
      if (cancelRequested) controller.abort(CANCELLED);
      if (entry.steps !== undefined) void job.updateProgress({ steps: entry.steps }).catch(() => undefined);
    },
  });
  const handBack = async (): Promise<never> => {
    await context.transitions.requeue(record, { ...by, why: { kind: 'handed_back' } });
    await job.moveToDelayed(Date.now(), options.token);
    throw new DelayedError();
  };
  try {
    const value = await options.run({ by, journal, signal: controller.signal });
    if (stoppedByShutdown(controller.signal)) await handBack();
    return { ended: 'ran', value, by };
  } catch (error) {
    if (error instanceof DelayedError) throw error;
    if (stoppedByShutdown(controller.signal)) await handBack();
    if (error instanceof LlmError && error.code === 'rate_limited') {
      await context.transitions.requeue(record, { ...by, why: { kind: 'rate_limited', message: error.message } });
      await context.rateLimit(error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : DEFAULT_RATE_LIMIT_MS);
      throw new RateLimitError();
    }
    if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) {
      await context.transitions.requeue(record, { ...by, why: { kind: 'retry', retry: job.attemptsMade + 2, message: (error as Error).message } });
      throw error;
    }
    return { ended: 'gave_up', message: (error as Error).message, by };
  } finally {
    release();
  }
}

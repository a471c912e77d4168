/**
 * The kinds of job, in one catalog: each kind's payload schema, the pools that run it, and its job
 * options (attempts, backoff, what is kept). Jobs are added only by `enqueue`, which checks each
 * payload as it is added; a worker reads a job with `readJob`, which checks it again as it is picked
 * up. The handlers are the worker's (apps/worker/src/job-handlers.ts).
 */
import { UnrecoverableError, type Job, type JobsOptions, type Queue } from 'bullmq';
import { z } from 'zod';
import { PLANNER_POOL, RETRY_LIMITS, type AgentPool } from '@agentq/contract';
import { TASK_ID_PATTERN } from '@agentq/store';

/** A task's job: which task, and its tenant (whose lists its claim updates without reading the task first). */
const taskJob = z.object({
  taskId: z.string().regex(TASK_ID_PATTERN, 'is not a task id'),
  tenant: z.string().min(1).optional(),
});

/**
 * The backoff type of a task's job: the run that failed says how long its job waits (`RetryLater`), from
 * its task's retry policy; BullMQ asks `jobBackoff`, which the workers give it.
 */
export const JOB_BACKOFF = 'task-policy';

/** A run failed and its task is to be tried again after `delayMs` (its retry policy's wait); `message` is the error's. */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RetryLater';
  }
}

/**
 * BullMQ's custom backoff (a worker's `settings.backoffStrategy`): the wait the failed run asked for; for
 * an error thrown before a run decided (Redis away at its claim), 2 s doubling.
 */
export function jobBackoff(attemptsMade: number, _type?: string, error?: Error): number {
  return error instanceof RetryLater ? error.delayMs : 2_000 * 2 ** Math.max(0, attemptsMade - 1);
}

/**
 * Transient failures are tried again with backoff; the next attempt resumes from the task's journal. How
 * many attempts, and how far apart, is the task's retry policy's (the run decides): the job allows the most
 * any policy may ask.
 */
const RETRIED: JobsOptions = {
  attempts: RETRY_LIMITS.maxAttempts,
  backoff: { type: JOB_BACKOFF },
  // The task record holds the outcome: a completed job is removed at once (an id added again finds
  // its task ended and does nothing); a failed one is kept a day for bull-board.
  removeOnComplete: true,
  removeOnFail: { age: 24 * 3600 },
};

export const JOB_CATALOG = {
  /** Runs a task in its pool: the agent loop, or, in the planner's, planning it. */
  agent: { payload: taskJob, pools: 'any', options: RETRIED },
  /** The end of a planned task, once every subtask ended: the final answer, a re-plan, or the failure. */
  finish: { payload: taskJob, pools: [PLANNER_POOL], options: RETRIED },
} satisfies Record<string, { payload: z.ZodType; pools: 'any' | readonly AgentPool[]; options: JobsOptions }>;

export type JobKind = keyof typeof JOB_CATALOG;
export type JobPayload<Kind extends JobKind> = z.infer<(typeof JOB_CATALOG)[Kind]['payload']>;

export interface NewJob<Kind extends JobKind = JobKind> {
  kind: Kind;
  pool: AgentPool;
  payload: JobPayload<Kind>;
  /** Default the payload's task id: a task's job is never queued twice. */
  jobId?: string;
}

/**
 * Adds jobs, one bulk call per pool, each payload checked against its kind. A job has no BullMQ
 * priority: fair admission orders each tenant's tasks by priority before they become jobs, and a
 * queue of prioritized jobs costs Redis 3 more commands a job (its counter, its sorted set, the pop).
 */
export async function enqueue(queues: (pool: AgentPool) => Queue, jobs: readonly NewJob[]): Promise<void> {
  const byPool = new Map<AgentPool, NewJob[]>();
  for (const job of jobs) {
    const kind = JOB_CATALOG[job.kind];
    if (kind.pools !== 'any' && !(kind.pools as readonly AgentPool[]).includes(job.pool))
      throw new Error(`A ${job.kind} job cannot run in the ${job.pool} pool`);
    kind.payload.parse(job.payload);
    const list = byPool.get(job.pool);
    if (list) list.push(job);
    else byPool.set(job.pool, [job]);
  }
  await Promise.all(
    [...byPool].map(([pool, list]) =>
      queues(pool).addBulk(
        list.map((job) => ({
          name: job.kind,
          data: job.payload,
          opts: {
            ...JOB_CATALOG[job.kind].options,
            jobId: job.jobId ?? job.payload.taskId,
          },
        })),
      ),
    ),
  );
}

/** A picked-up job's kind and payload, checked; a job no kind accepts is failed for good. */
export function readJob(job: Job, pool: AgentPool): { kind: JobKind; payload: JobPayload<JobKind> } {
  const kind = job.name as JobKind;
  const entry = JOB_CATALOG[kind] as (typeof JOB_CATALOG)[JobKind] | undefined;
  if (!entry || (entry.pools !== 'any' && !(entry.pools as readonly AgentPool[]).includes(pool)))
    throw new UnrecoverableError(`No job kind "${job.name}" runs in the ${pool} pool`);
  const parsed = entry.payload.safeParse(job.data);
  if (!parsed.success) throw new UnrecoverableError(`Invalid ${kind} job payload: ${parsed.error.message}`);
  return { kind, payload: parsed.data };
}

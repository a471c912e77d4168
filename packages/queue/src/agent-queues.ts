/**
 * One BullMQ queue per agent pool, with the job options every agent job shares: retries with
 * backoff for transient failures (a crashed worker's job resumes from its journal); a completed job
 * removed at once (the task record holds the outcome, and a job id added again finds its task ended),
 * a failed one kept a day for bull-board.
 */
import { AGENT_POOLS, type AgentPool } from '@agentq/contract';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { type AgentJob } from './task-schemas.js';

export const AGENT_JOB_NAME = 'agent';

export const AGENT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: true,
  removeOnFail: { age: 24 * 3600 },
};

export type AgentQueues = Record<AgentPool, Queue<AgentJob>>;

export function createAgentQueues(options: { connection: Redis; keys: Keys }): AgentQueues {
  return Object.fromEntries(
    AGENT_POOLS.map((pool) => {
      const queue = new Queue<AgentJob>(pool, { connection: options.connection, prefix: options.keys.bullPrefix, defaultJobOptions: AGENT_JOB_OPTIONS });
      // Its errors are its connection's (watchRedis says those once); a failed call fails where it was made.
      queue.on('error', () => undefined);
      return [pool, queue];
    }),
  ) as AgentQueues;
}

/** BullMQ runs 1 first; our API's 10 is the most urgent. */
export function bullPriority(priority: number): number {
  return 11 - priority;
}

/** Enqueues tasks with one bulk call per pool. The job id is the task id, so a task is queued once. */
export async function enqueueTasks(options: {
  queues: AgentQueues;
  tasks: ReadonlyArray<{ id: string; agent: string; priority: number }>;
}): Promise<void> {
  const byPool = new Map<AgentPool, Array<{ id: string; priority: number }>>();
  for (const task of options.tasks) {
    const pool = task.agent as AgentPool;
    byPool.set(pool, [...(byPool.get(pool) ?? []), task]);
  }
  await Promise.all(
    [...byPool].map(([pool, tasks]) =>
      options.queues[pool].addBulk(
        tasks.map((task) => ({
          name: AGENT_JOB_NAME,
          data: { taskId: task.id },
          opts: { jobId: task.id, priority: bullPriority(task.priority) },
        })),
      ),
    ),
  );
}

export async function closeQueues(queues: AgentQueues): Promise<void> {
  await Promise.all(Object.values(queues).map((queue) => queue.close()));
}

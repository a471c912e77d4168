/**
 * Which handler runs each kind of job of the catalog (`@agentq/scheduling`'s jobs.ts), per pool: the
 * agent loop for an agent pool's tasks; planning and a planned task's end for the planner's.
 */
import { DelayedError, type Job } from 'bullmq';
import type { AgentPool } from '@agentq/contract';
import { loopTurn } from '@agentq/llm';
import { CommitNotReplicated } from '@agentq/store';
import { readJob } from '@agentq/scheduling';
import type { Metrics } from '@agentq/telemetry';
import { runFinishJob } from './finish-job.js';
import type { JobContext } from './job-context.js';
import { runPlanJob } from './plan-job.js';
import { runAgentJob } from './run-agent-job.js';

/** How soon a job whose commit no replica confirmed is tried again. */
const REPLICA_RETRY_MS = 1_000;

/** The BullMQ processor of a pool: each job read (and checked) by its kind, then handled. */
export function processorFor(
  pool: AgentPool,
  context: JobContext & { offerTool: boolean; metrics: Metrics },
): (job: Job, token?: string) => Promise<string> {
  const active = context.metrics.activeJobs.labels({ pool });
  return async (job, token) => {
    active.inc();
    try {
      // Jobs are fetched in bursts too: each starts in its turn (loop-turn.ts).
      await loopTurn();
      const { kind, payload } = readJob(job, pool);
      switch (kind) {
        case 'agent':
          return await (pool === 'planner'
            ? runPlanJob(job, payload, context, token)
            : runAgentJob(job, payload, context, pool, token));
        case 'finish':
          return await runFinishJob(job, payload, context, token);
      }
    } catch (error) {
      // No replica confirmed a commit (AGENTQ_COMMIT_REPLICAS): tried again in a moment, from what Redis
      // holds, without using an attempt, for as long as the replicas are away.
      if (error instanceof CommitNotReplicated) {
        await job.moveToDelayed(Date.now() + REPLICA_RETRY_MS, token);
        throw new DelayedError();
      }
      throw error;
    } finally {
      active.dec();
    }
  };
}

/**
 * The jobs that wait for a model's endpoint (scheduling's model-outages.ts lists them), named so any
 * worker can wake them: their pool, job id and task (whose cell holds the queue).
 */
import { Job } from 'bullmq';
import type { AgentQueues } from './agent-queues.js';

/** How a job is listed among an outage's waiters. */
export function waitingJob(job: Pick<Job, 'queueName' | 'id'>, taskId: string): string {
  return JSON.stringify([job.queueName, job.id, taskId]);
}

/**
 * Moves each listed job that is still delayed to its queue now. A job that runs already, or ended, or
 * whose pool this configuration no longer has, is left as it is: nothing waits for it.
 */
export async function wakeJobs(queues: AgentQueues, members: readonly string[]): Promise<void> {
  await Promise.all(
    members.map(async (member) => {
      try {
        const [pool, jobId, taskId] = JSON.parse(member) as [string, string, string];
        const job = await Job.fromId(queues.of(taskId).queue(pool), jobId);
        await job?.promote();
      } catch {
        // Not delayed any more, or not a job of this install's pools: there is nothing to wake.
      }
    }),
  );
}

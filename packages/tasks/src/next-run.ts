/**
 * How a waiting task runs again (an answer, or its last approval decided): as a new job
 * `<task>-r<n>`, which the commit that queues it leases in its pool's fair leases until the job is
 * added. A caller that dies in between leaves the lease to a worker's FairAdmission.recover.
 */
import { type AgentQueues, enqueue } from '@agentq/scheduling';
import type { TaskRecord } from '@agentq/store';

export interface NextRun {
  jobId: string;
  resumes: number;
  lease: { key: string; ms: number };
}

/** The next run's job, its number, and the lease its queuing commit takes. */
export function nextRun(queues: AgentQueues, record: TaskRecord): NextRun {
  const resumes = record.resumes + 1;
  return { jobId: `${record.id}-r${resumes}`, resumes, lease: queues.of(record.id).admission.leaseOf(record.agent) };
}

/** Adds the next run's job, once its commit queued the task, and ends its lease. */
export async function addNextRun(queues: AgentQueues, record: TaskRecord, run: NextRun): Promise<void> {
  await enqueue(queues.of(record.id).queue, [
    {
      kind: 'agent',
      pool: record.agent,
      payload: { taskId: record.id, tenant: record.tenant },
      jobId: run.jobId,
    },
  ]);
  await queues.of(record.id).admission.endLeases(record.agent, [record.id]);
}

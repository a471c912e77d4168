/**
 * Tasks whose run must wait (their model's endpoint down, a retry's backoff, a shared limit): the run's
 * requeue puts the task in its pool's due set (`keys.fairDue`, score: when its wait is over, Redis
 * time) and its job ends. When due, admission puts it back in its tenant's list at its priority
 * (admit.lua), and it runs again as a new job, `<task>-r<n>` (the record's `jobId`): a waiting task
 * holds no queue slot and takes fair turns when it comes back. Waking an outage's waiters makes them
 * due now. A job that waits as a delayed job (a planned task's end) is listed the same way, and woken
 * by promoting it.
 */
import { Job } from 'bullmq';
import type { AgentPool } from '@agentq/contract';
import type { AgentQueues } from './agent-queues.js';

/**
 * A waiting task as its pool's due set and an outage's waiters list it: the same member from run to
 * run (an outage knows which of its waiters tries the endpoint next by it).
 */
export interface DueTask {
  pool: AgentPool;
  taskId: string;
  tenant: string;
  priority: number;
  /** A job that waits delayed: its id (to promote it). */
  delayedJob?: string;
}

/** The member that lists `task` (JSON: `[pool, task, tenant, priority]`, and a delayed job's id). */
export function dueMember(task: DueTask): string {
  return JSON.stringify([
    task.pool,
    task.taskId,
    task.tenant,
    task.priority,
    ...(task.delayedJob ? [task.delayedJob] : []),
  ]);
}

/** A member as `dueMember` made it; undefined for anything else. */
function parseMember(member: string): DueTask | undefined {
  try {
    const parsed = JSON.parse(member) as unknown[];
    // An older version's waiter, listed by its delayed job: `[pool, job id, task]`.
    if (parsed.length === 3) {
      const [pool, job, task] = parsed as [string, string, string];
      return { pool, taskId: task, tenant: '', priority: 5, delayedJob: job };
    }
    const [pool, taskId, tenant, priority, delayedJob] = parsed as [string, string, string, number, string?];
    if (typeof taskId !== 'string') return undefined;
    return { pool, taskId, tenant, priority, ...(delayedJob ? { delayedJob } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Wakes the listed waiters: a task in its due set is due now, and admission takes a turn; a delayed
 * job is moved to its queue. One that runs already, or ended, or whose pool this configuration no
 * longer has, is left as it is: nothing waits for it.
 */
export async function wakeWaiters(queues: AgentQueues, members: readonly string[]): Promise<void> {
  await Promise.all(
    members.map(async (member) => {
      const task = parseMember(member);
      if (!task || !queues.pools.includes(task.pool)) return;
      const cell = queues.of(task.taskId);
      if (!task.delayedJob) {
        if (await cell.admission.dueNow(task.pool, member)) await cell.admission.admit(task.pool);
        return;
      }
      try {
        await (await Job.fromId(cell.queue(task.pool), task.delayedJob))?.promote();
      } catch {
        // Not delayed any more: there is nothing to wake.
      }
    }),
  );
}

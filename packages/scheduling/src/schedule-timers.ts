/**
 * What fires schedules: one BullMQ job scheduler per schedule, on a queue of its own (whose name no
 * agent can have), each firing a job `{scheduleId}` that a worker turns into a task. BullMQ keeps the
 * next time in Redis: schedules survive any process's restart, and each firing is one job however many
 * workers there are. The same queue carries the other timers of tasks: an approval's time limit, a
 * delayed job `{taskId, step}`.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Keys } from '@agentq/store';

/** When a schedule fires: a cron pattern in a time zone, or every so many milliseconds. */
export type ScheduleTiming = { cron: string; timezone?: string | undefined } | { every: number };

export class ScheduleTimers {
  readonly queue: Queue;

  constructor(options: { connection: ConnectionOptions; keys: Keys }) {
    this.queue = new Queue(options.keys.schedulesQueue, {
      connection: options.connection,
      prefix: options.keys.homeBullPrefix,
      // A firing is done once its task is submitted: nothing to keep.
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 100 },
    });
  }

  /** Starts (or changes) a schedule's timer. */
  async set(id: string, timing: ScheduleTiming): Promise<void> {
    await this.queue.upsertJobScheduler(
      id,
      'cron' in timing
        ? { pattern: timing.cron, ...(timing.timezone ? { tz: timing.timezone } : {}) }
        : { every: timing.every },
      { name: 'fire', data: { scheduleId: id }, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
  }

  /** Stops a schedule's timer (a firing already due may still come: its schedule is read when it does). */
  async remove(id: string): Promise<void> {
    await this.queue.removeJobScheduler(id);
  }

  /**
   * Rejects step `step`'s calls awaiting approval at `at` (ms since the epoch) if nobody decided them
   * (expireApprovals). Set before the task waits: a timer with nothing left to reject does nothing.
   */
  async expireApprovalsAt(taskId: string, step: number, at: number): Promise<void> {
    await this.queue.add(
      'approvals',
      { taskId, step },
      { jobId: `${taskId}-s${step}-approvals`, delay: Math.max(0, at - Date.now()) },
    );
  }

  /** When a schedule fires next (ms since the epoch), if its timer runs. */
  async next(id: string): Promise<number | undefined> {
    return (await this.queue.getJobScheduler(id))?.next ?? undefined;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

/**
 * A worker's side: each firing calls `fire` (which never throws for a run it could not submit), each
 * approvals' time limit `expireApprovals`.
 */
export function fireSchedules(options: {
  connection: ConnectionOptions;
  keys: Keys;
  fire: (scheduleId: string, at: number) => Promise<void>;
  expireApprovals: (taskId: string, step: number) => Promise<void>;
}): Worker {
  return new Worker(
    options.keys.schedulesQueue,
    async (job) => {
      if (job.name === 'approvals') {
        const { taskId, step } = job.data as { taskId: string; step: number };
        return options.expireApprovals(taskId, step);
      }
      return options.fire((job.data as { scheduleId: string }).scheduleId, job.timestamp + (job.opts.delay ?? 0));
    },
    { connection: options.connection, prefix: options.keys.homeBullPrefix, concurrency: 4 },
  );
}

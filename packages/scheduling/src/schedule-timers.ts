/**
 * What fires schedules: one BullMQ job scheduler per schedule, on a queue of its own (whose name no
 * agent can have), each firing a job `{scheduleId, timing}` that a worker turns into a task. BullMQ
 * keeps the next time in Redis: schedules survive any process's restart, and each firing is one job
 * however many workers there are. A firing carries the timing its timer had (`timingKey`): one made on
 * a timing the schedule no longer has (a job already due when it changed) is known as such. The same
 * queue carries the other timers of tasks: an approval's time limit, a delayed job `{taskId, step}`.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Keys } from '@agentq/store';

/** When a schedule fires: a cron pattern in a time zone, or every so many milliseconds. */
export type ScheduleTiming = { cron: string; timezone?: string | undefined } | { every: number };

/** A timing as one text: two timings that fire alike are the same text. */
export function timingKey(timing: ScheduleTiming): string {
  return 'cron' in timing ? `cron ${timing.cron} ${timing.timezone ?? 'UTC'}` : `every ${timing.every}`;
}

/** A schedule's firing: what its job says. */
export interface Firing {
  scheduleId: string;
  /** When it was due (ms since the epoch). */
  at: number;
  /** The timing of the timer that made it (timingKey); absent from a timer of an older version. */
  timing: string | undefined;
}

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

  /** Starts (or changes) a schedule's timer; nothing to do when it runs on this timing already. */
  async set(id: string, timing: ScheduleTiming): Promise<void> {
    const key = timingKey(timing);
    const current = await this.queue.getJobScheduler(id);
    if ((current?.template?.data as { timing?: string } | undefined)?.timing === key && current?.next) return;
    await this.queue.upsertJobScheduler(
      id,
      'cron' in timing
        ? { pattern: timing.cron, ...(timing.timezone ? { tz: timing.timezone } : {}) }
        : { every: timing.every },
      { name: 'fire', data: { scheduleId: id, timing: key }, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
  }

  /** The ids of every schedule that has a timer, a page of `count` at a time from `start`. */
  async ids(start: number, count: number): Promise<string[]> {
    return (await this.queue.getJobSchedulers(start, start + count - 1, true)).flatMap((scheduler) =>
      scheduler.key ? [scheduler.key] : [],
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
  fire: (firing: Firing) => Promise<void>;
  expireApprovals: (taskId: string, step: number) => Promise<void>;
}): Worker {
  return new Worker(
    options.keys.schedulesQueue,
    async (job) => {
      if (job.name === 'approvals') {
        const { taskId, step } = job.data as { taskId: string; step: number };
        return options.expireApprovals(taskId, step);
      }
      const { scheduleId, timing } = job.data as { scheduleId: string; timing?: string };
      return options.fire({ scheduleId, at: job.timestamp + (job.opts.delay ?? 0), timing });
    },
    { connection: options.connection, prefix: options.keys.homeBullPrefix, concurrency: 4 },
  );
}

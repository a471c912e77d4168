/**
 * Jobs finished per pool and minute, for the throughput the dashboard draws. Each worker counts its
 * own in memory and adds them to Redis once a second (`FinishedJobs`): a job costs Redis no command
 * of its own, where BullMQ's worker metrics cost two to five. A worker that dies loses at most its last
 * second's counts. A minute's counts are a hash (`completed`, `failed`) that expires after two hours;
 * the counts since the pool's first job are one more.
 */
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';

export type JobOutcome = 'completed' | 'failed';

const MINUTE_MS = 60_000;
/** Minutes a minute's counts are kept: the longest history shown is an hour. */
const KEPT_MS = 2 * 60 * MINUTE_MS;

/** A count not yet added: to a field of a hash, which expires or not. */
interface Pending {
  key: string;
  outcome: JobOutcome;
  count: number;
  expires: boolean;
}

export class FinishedJobs {
  /** Counts not yet added, by key and outcome: each minute's and the totals. */
  private pending = new Map<string, Pending>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly onError: (error: Error) => void,
    flushMs = 1_000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  count(pool: string, outcome: JobOutcome, now = Date.now()): void {
    this.add({ key: this.keys.finishedJobs(pool, Math.floor(now / MINUTE_MS)), outcome, count: 1, expires: true });
    this.add({ key: this.keys.finishedJobsTotal(pool), outcome, count: 1, expires: false });
  }

  /** Adds what was counted since the last flush (a flush under way first). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private add(counted: Pending): void {
    const entry = `${counted.outcome} ${counted.key}`;
    const earlier = this.pending.get(entry);
    if (earlier) earlier.count += counted.count;
    else this.pending.set(entry, { ...counted });
  }

  private async write(): Promise<void> {
    if (!this.pending.size) return;
    const counted = [...this.pending.values()];
    this.pending = new Map();
    const pipeline = this.redis.pipeline();
    for (const { key, outcome, count, expires } of counted) {
      pipeline.hincrby(key, outcome, count);
      if (expires) pipeline.pexpire(key, KEPT_MS);
    }
    let failure: Error | undefined;
    const replies = await pipeline.exec().catch((error: Error) => {
      failure = error;
      return null;
    });
    // What was not added is added at the next flush (Redis away or full), each count on its own.
    let reply = 0;
    for (const one of counted) {
      const error = replies ? replies[reply]![0] : failure;
      reply += one.expires ? 2 : 1;
      if (!error) continue;
      failure = error;
      this.add(one);
    }
    if (failure) this.onError(failure);
  }
}

export interface FinishedSeries {
  /** Per minute, oldest first, the running minute last. */
  completed: number[];
  failed: number[];
  /** Since the pool's first job. */
  total: Record<JobOutcome, number>;
}

/** A pool's finished jobs in each of the last `minutes` minutes, and in all. */
export async function readFinishedJobs(
  redis: Redis,
  keys: Keys,
  pool: string,
  minutes: number,
  now = Date.now(),
): Promise<FinishedSeries> {
  const last = Math.floor(now / MINUTE_MS);
  const pipeline = redis.pipeline();
  for (let minute = last - minutes + 1; minute <= last; minute++)
    pipeline.hmget(keys.finishedJobs(pool, minute), 'completed', 'failed');
  pipeline.hmget(keys.finishedJobsTotal(pool), 'completed', 'failed');
  const rows = ((await pipeline.exec()) ?? []).map(([error, row]) => {
    if (error) throw error;
    return (row as Array<string | null>).map((value) => Number(value ?? 0));
  });
  const total = rows.pop()!;
  return {
    completed: rows.map((row) => row[0]!),
    failed: rows.map((row) => row[1]!),
    total: { completed: total[0]!, failed: total[1]! },
  };
}

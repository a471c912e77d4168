/**
 * Schedules as Redis keeps them: a record (its timing, its task as submitted, its tenant, whether it is
 * paused), its last runs, and each tenant's set of them. What fires them is BullMQ's job scheduler of
 * the same id (the task service's schedules); this is what they are and what they did.
 */
import type { ScheduleRunView } from '@agentq/contract';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';

/** The runs a schedule keeps. */
const KEPT_RUNS = 20;

export interface StoredSchedule {
  id: string;
  tenant: string;
  cron?: string;
  timezone?: string;
  every?: number;
  overlap: 'skip' | 'allow';
  paused: boolean;
  /** The task each run submits, as its client wrote it (JSON). */
  task: string;
  createdAt: string;
  /** The task of its last run, for `overlap: skip`. */
  lastTaskId?: string;
}

export class ScheduleStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async save(schedule: StoredSchedule): Promise<void> {
    const { every, ...rest } = schedule;
    const fields: Record<string, string> = {
      ...Object.fromEntries(
        Object.entries(rest)
          .filter(([, value]) => value !== undefined)
          .map(([name, value]) => [name, String(value)]),
      ),
      ...(every !== undefined ? { every: String(every) } : {}),
    };
    const write = this.redis.multi();
    // Written whole: a field a change left out (a cron replaced by `every`) must not stay.
    write.del(this.keys.schedule(schedule.id));
    write.hset(this.keys.schedule(schedule.id), fields);
    write.zadd(this.keys.tenantSchedules(schedule.tenant), Date.parse(schedule.createdAt), schedule.id);
    await write.exec();
  }

  async get(id: string): Promise<StoredSchedule | undefined> {
    const hash = await this.redis.hgetall(this.keys.schedule(id));
    if (!hash.id) return undefined;
    return {
      id: hash.id,
      tenant: hash.tenant!,
      ...(hash.cron ? { cron: hash.cron } : {}),
      ...(hash.timezone ? { timezone: hash.timezone } : {}),
      ...(hash.every ? { every: Number(hash.every) } : {}),
      overlap: hash.overlap === 'allow' ? 'allow' : 'skip',
      paused: hash.paused === 'true',
      task: hash.task ?? '{}',
      createdAt: hash.createdAt ?? '',
      ...(hash.lastTaskId ? { lastTaskId: hash.lastTaskId } : {}),
    };
  }

  /** A tenant's schedule ids, oldest first. */
  ids(tenant: string): Promise<string[]> {
    return this.redis.zrange(this.keys.tenantSchedules(tenant), 0, -1);
  }

  /** Its last runs, newest first. */
  async runs(id: string): Promise<ScheduleRunView[]> {
    return (await this.redis.lrange(this.keys.scheduleRuns(id), 0, KEPT_RUNS - 1)).map(
      (text) => JSON.parse(text) as ScheduleRunView,
    );
  }

  /** A run: the task it submitted (kept as the last one) or why it submitted none. */
  async recordRun(id: string, run: ScheduleRunView): Promise<void> {
    const write = this.redis.multi();
    write.lpush(this.keys.scheduleRuns(id), JSON.stringify(run));
    write.ltrim(this.keys.scheduleRuns(id), 0, KEPT_RUNS - 1);
    if (run.taskId) write.hset(this.keys.schedule(id), 'lastTaskId', run.taskId);
    await write.exec();
  }

  async remove(schedule: Pick<StoredSchedule, 'id' | 'tenant'>): Promise<void> {
    await this.redis
      .multi()
      .del(this.keys.schedule(schedule.id), this.keys.scheduleRuns(schedule.id))
      .zrem(this.keys.tenantSchedules(schedule.tenant), schedule.id)
      .exec();
  }
}

/**
 * A schedule is its record; its timer (BullMQ's job scheduler) only follows it. After every write of a
 * record (create, change, pause, resume, delete, a pause for a tenant that left), and at each process's
 * start for every record and every timer, the timer is made what the record says: none for a schedule
 * paused or gone, else one on its timing. Several processes may change one schedule at once, so a
 * timer write is checked against the record read again after it: when the record was written
 * meanwhile (its revision moved on), the timer is set again from the new one. The last writer of a
 * record always follows it last, so the timer ends as the record is; a process killed between its
 * record and its timer leaves what the next start (or the schedule's next firing) puts right.
 */
import type { ScheduleTimers, ScheduleTiming } from '@agentq/scheduling';
import type { ScheduleStore, StoredSchedule } from '@agentq/store';

/** How many times a timer is set again while its record keeps changing (its last writer follows it too). */
const FOLLOW_PASSES = 10;
/** Records and timers read at a time by a reconcile. */
const PAGE = 500;

export interface TimerSync {
  schedules: ScheduleStore;
  timers: ScheduleTimers;
}

/** When a schedule fires, as its record says. */
export function timingOf(schedule: Pick<StoredSchedule, 'cron' | 'timezone' | 'every'>): ScheduleTiming {
  return schedule.cron !== undefined
    ? { cron: schedule.cron, timezone: schedule.timezone }
    : { every: schedule.every! };
}

/** Makes schedule `id`'s timer what its record says now (none when it is paused or gone). */
export async function followRecord(sync: TimerSync, id: string): Promise<void> {
  for (let pass = 0; pass < FOLLOW_PASSES; pass++) {
    const record = await sync.schedules.get(id);
    if (!record || record.paused) await sync.timers.remove(id);
    else await sync.timers.set(id, timingOf(record));
    const now = await sync.schedules.get(id);
    if (now?.revision === record?.revision) return;
  }
}

/**
 * At start: every record's timer made what it says, and every timer without a record removed. Answers
 * how many of each it looked at.
 */
export async function reconcileTimers(sync: TimerSync): Promise<{ records: number; timers: number }> {
  let records = 0;
  let cursor: string | undefined;
  do {
    const page = await sync.schedules.page({ limit: PAGE, cursor });
    for (const schedule of page.schedules) await followRecord(sync, schedule.id);
    records += page.schedules.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  // Every timer's id first: removing one while paging would move the next ones past the page.
  const ids: string[] = [];
  for (let start = 0; ; start += PAGE) {
    const page = await sync.timers.ids(start, PAGE);
    ids.push(...page);
    if (page.length < PAGE) break;
  }
  for (const id of ids) if (!(await sync.schedules.get(id))) await followRecord(sync, id);
  return { records, timers: ids.length };
}

/**
 * Schedules: create, read, change, pause, delete, and fire. Each firing submits the schedule's task
 * as its tenant's, through the task service (so the tenant's limits hold, and its default webhook),
 * carrying `scheduleId`; with `overlap: skip` (the default) a firing while the last run's task has not
 * ended submits nothing. Every firing is written down with what it did: a run or why it skipped.
 */
import { TERMINAL_STATUSES, type ScheduleView } from '@agentq/contract';
import type { ScheduleTimers, ScheduleTiming } from '@agentq/scheduling';
import type { ScheduleStore, StoredSchedule, TaskStore } from '@agentq/store';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { taskInputSchema, type TaskInput } from './task-schemas.js';
import type { SubmittedTask } from './transitions.js';

/** What a client gives: one of `cron` (with `timezone`) or `every`, and the task. */
export interface ScheduleInput {
  cron?: string | undefined;
  timezone?: string | undefined;
  every?: number | undefined;
  overlap?: 'skip' | 'allow' | undefined;
  paused?: boolean | undefined;
  /** The task as a submit takes it (checked by the caller). */
  task: Record<string, unknown>;
}

export class ScheduleService {
  constructor(
    private readonly options: {
      schedules: ScheduleStore;
      timers: ScheduleTimers;
      tasks: TaskStore;
      /** Submits a run's task as the tenant's (TaskService.submit, with the schedule named). */
      submit?: (tenant: string, input: TaskInput, scheduleId: string) => Promise<SubmittedTask>;
    },
  ) {}

  async create(tenant: string, input: ScheduleInput): Promise<ScheduleView> {
    const schedule: StoredSchedule = {
      id: `sch_${randomUUID()}`,
      tenant,
      ...timingOf(input),
      overlap: input.overlap ?? 'skip',
      paused: input.paused ?? false,
      task: JSON.stringify(input.task),
      createdAt: new Date().toISOString(),
    };
    await this.options.schedules.save(schedule);
    if (!schedule.paused) await this.options.timers.set(schedule.id, timing(schedule));
    return this.view(schedule);
  }

  get(id: string): Promise<StoredSchedule | undefined> {
    return this.options.schedules.get(id);
  }

  async list(tenant: string): Promise<ScheduleView[]> {
    const ids = await this.options.schedules.ids(tenant);
    const found = await Promise.all(ids.map((id) => this.options.schedules.get(id)));
    return Promise.all(found.flatMap((schedule) => (schedule ? [this.view(schedule)] : [])));
  }

  /** Changes what `change` names; a new timing, a pause or a resume takes effect at once. */
  async update(schedule: StoredSchedule, change: Partial<ScheduleInput>): Promise<ScheduleView> {
    const retimed = change.cron !== undefined || change.every !== undefined;
    const next: StoredSchedule = {
      ...schedule,
      ...(retimed ? { cron: undefined, timezone: undefined, every: undefined, ...timingOf(change) } : {}),
      ...(!retimed && change.timezone !== undefined ? { timezone: change.timezone } : {}),
      ...(change.overlap ? { overlap: change.overlap } : {}),
      ...(change.paused !== undefined ? { paused: change.paused } : {}),
      ...(change.task ? { task: JSON.stringify(change.task) } : {}),
    };
    await this.options.schedules.save(next);
    if (next.paused) await this.options.timers.remove(next.id);
    else await this.options.timers.set(next.id, timing(next));
    return this.view(next);
  }

  async remove(schedule: StoredSchedule): Promise<void> {
    await this.options.timers.remove(schedule.id);
    await this.options.schedules.remove(schedule);
  }

  /** A firing: submits the schedule's task, or says why not. Never throws for a run it could not make. */
  async fire(id: string, at: number): Promise<void> {
    const schedule = await this.options.schedules.get(id);
    // Deleted or paused since the firing was due: nothing runs.
    if (!schedule || schedule.paused) return;
    const when = new Date(at).toISOString();
    const skip = (reason: string) => this.options.schedules.recordRun(id, { at: when, taskId: null, skipped: reason });
    if (schedule.overlap === 'skip' && schedule.lastTaskId) {
      const last = await this.options.tasks.getRecord(schedule.lastTaskId);
      if (last && !TERMINAL_STATUSES.has(last.status))
        return skip(`the last run's task ${last.id} is ${last.status} (overlap: skip)`);
    }
    const parsed = taskInputSchema.safeParse(JSON.parse(schedule.task));
    if (!parsed.success)
      return skip(`its task is no longer valid: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`);
    try {
      const submitted = await this.options.submit!(schedule.tenant, parsed.data, id);
      await this.options.schedules.recordRun(id, { at: when, taskId: submitted.id, skipped: null });
    } catch (error) {
      // A tenant limit, a full Redis, an agent no longer configured: said where the schedule is read.
      await skip((error as Error).message);
    }
  }

  async view(schedule: StoredSchedule): Promise<ScheduleView> {
    const [next, lastRuns] = await Promise.all([
      schedule.paused ? undefined : this.options.timers.next(schedule.id),
      this.options.schedules.runs(schedule.id),
    ]);
    return {
      id: schedule.id,
      tenant: schedule.tenant,
      cron: schedule.cron ?? null,
      timezone: schedule.cron ? (schedule.timezone ?? 'UTC') : null,
      every: schedule.every ?? null,
      overlap: schedule.overlap,
      paused: schedule.paused,
      task: JSON.parse(schedule.task) as Record<string, unknown>,
      createdAt: schedule.createdAt,
      nextRunAt: next === undefined ? null : new Date(next).toISOString(),
      lastRuns,
    };
  }
}

function timingOf(input: Partial<ScheduleInput>): Pick<StoredSchedule, 'cron' | 'timezone' | 'every'> {
  return input.cron !== undefined
    ? { cron: input.cron, ...(input.timezone ? { timezone: input.timezone } : {}) }
    : { every: input.every! };
}

function timing(schedule: StoredSchedule): ScheduleTiming {
  return schedule.cron !== undefined
    ? { cron: schedule.cron, timezone: schedule.timezone }
    : { every: schedule.every! };
}

/**
 * Schedules: create, read, list, change, pause, delete, and fire. A schedule stores its task (its files
 * too) for as long as it lives, so creating or growing one passes the admission a submit does (Redis's
 * room, the daily limit) and its tenant's room (limits.mb, and limits.schedules), checked where it is
 * stored (schedule-store.ts). Each firing submits the schedule's task as its tenant's, through the task
 * service (so the tenant's limits hold, and its default webhook), carrying `scheduleId`; with
 * `overlap: skip` (the default) a firing while the last run's task has not ended submits nothing. A
 * tenant that left the configuration file makes no more tasks: its schedule is paused at its next firing,
 * with the reason, and stays paused until it is resumed once the tenant is back. Every firing is written
 * down with what it did: a run or why it skipped.
 *
 * The record is the schedule; its timer follows it after every write (schedule-timer-sync.ts). A change
 * is saved only over the revision it was made from (else made again from the record as it is now), so
 * no change undoes another made at once; a firing that its record no longer wants (deleted, paused, or
 * due on a timing it no longer has) makes nothing and puts its timer right.
 */
import { AgentqError, TERMINAL_STATUSES, type ScheduleView } from '@agentq/contract';
import { timingKey, type Firing, type ScheduleTimers } from '@agentq/scheduling';
import {
  inputFilesBytes,
  scheduleBytes,
  type RoomLimits,
  type ScheduleFile,
  type SchedulePage,
  type ScheduleStore,
  type StoredSchedule,
  type TaskStore,
} from '@agentq/store';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Admission } from './admission.js';
import { followRecord, reconcileTimers, timingOf, type TimerSync } from './schedule-timer-sync.js';
import { assertSigned, type CanSign } from './signed-webhooks.js';
import { taskInputSchema, type TaskInput } from './task-schemas.js';
import { tenantGone } from './tenant-presence.js';
import type { SubmittedTask } from './transitions.js';

/** What a client gives: one of `cron` (with `timezone`) or `every`, and the task. */
export interface ScheduleInput {
  cron?: string | undefined;
  timezone?: string | undefined;
  every?: number | undefined;
  overlap?: 'skip' | 'allow' | undefined;
  paused?: boolean | undefined;
  /** The task as a submit takes it (checked by the caller): its `files` with their contents in base64. */
  task: Record<string, unknown>;
}

/** How many times a change is made again from a record that others keep changing meanwhile. */
const CHANGE_ATTEMPTS = 10;

/** A schedule changed by others each time a change was made from it (CHANGE_ATTEMPTS times): a 409. */
export class ScheduleChangedError extends AgentqError {
  readonly code = 'schedule_changed';
  readonly retryable = true;
  constructor(readonly id: string) {
    super(
      `Schedule ${id} was changed by other requests each time this change was made: nothing was saved; send it again`,
    );
  }
}

/** A schedule of a tenant that left the configuration file cannot be resumed (a 409). */
export class TenantGoneError extends AgentqError {
  readonly code = 'tenant_gone';
  readonly retryable = false;
  constructor(readonly tenant: string) {
    super(schedulesStopped(tenant));
  }
}

function schedulesStopped(tenant: string): string {
  return `${tenantGone(tenant)}: its schedules make no tasks and stay paused; once the tenant is back, resume them (PATCH paused: false)`;
}

export interface ScheduleServiceOptions {
  schedules: ScheduleStore;
  timers: ScheduleTimers;
  tasks: TaskStore;
  /** Whether a tenant is still in the configuration file (tenant-presence.ts, tenantHasKeys). */
  tenantActive: (tenant: string) => boolean;
  /** The gate a new schedule passes, as a submit does (TaskService's). */
  admission: Admission;
  /** A tenant's room (limits.mb): a schedule's bytes must fit. */
  room: (tenant: string) => RoomLimits;
  /** How many schedules a tenant may hold (limits.schedules). */
  maxSchedules: (tenant: string) => number;
  /** Whether a tenant's webhooks can be signed (TaskService's): a task with a webhook is refused where not. */
  canSign: CanSign;
  /** Submits a run's task as the tenant's (TaskService.submit, with the schedule named; refused there too). */
  submit: (tenant: string, input: TaskInput, scheduleId: string) => Promise<SubmittedTask>;
}

export class ScheduleService {
  private readonly timerSync: TimerSync;

  constructor(private readonly options: ScheduleServiceOptions) {
    this.timerSync = { schedules: options.schedules, timers: options.timers };
  }

  /** At a process's start: every timer made what its record says, and timers without a record removed. */
  reconcile(): Promise<{ records: number; timers: number }> {
    return reconcileTimers(this.timerSync);
  }

  async create(tenant: string, input: ScheduleInput): Promise<ScheduleView> {
    assertSigned(this.options.canSign, tenant, input.task.webhook !== undefined);
    const { task, files } = stored(input.task);
    const schedule = {
      id: `sch_${randomUUID()}`,
      tenant,
      ...inputTiming(input),
      overlap: input.overlap ?? 'skip',
      paused: input.paused ?? false,
      task,
      createdAt: new Date().toISOString(),
      bytes: scheduleBytes(task, inputFilesBytes(files)),
    } satisfies Omit<StoredSchedule, 'order' | 'revision'>;
    await this.options.admission.admit({ tenant, action: 'schedule', bytes: schedule.bytes });
    const saved = await this.options.schedules.save(schedule, {
      mode: 'create',
      files,
      maxSchedules: this.options.maxSchedules(tenant),
      limits: this.options.room(tenant),
    });
    await followRecord(this.timerSync, schedule.id);
    return this.view(saved as StoredSchedule);
  }

  get(id: string): Promise<StoredSchedule | undefined> {
    return this.options.schedules.get(id);
  }

  /** A page of a tenant's schedules (every tenant's without one), newest first. */
  async list(options: {
    tenant?: string | undefined;
    limit: number;
    cursor?: string | undefined;
  }): Promise<{ schedules: ScheduleView[]; nextCursor: string | null }> {
    const page: SchedulePage = await this.options.schedules.page(options);
    return {
      schedules: await Promise.all(page.schedules.map((schedule) => this.view(schedule))),
      nextCursor: page.nextCursor,
    };
  }

  /**
   * Changes what `change` names; a new timing, a pause or a resume takes effect at once; undefined when
   * it was deleted meanwhile. A resume of a tenant that left the configuration file is TenantGoneError.
   * `schedule` is the record as the caller read it: when another change was saved since, this one is
   * made again from the record as it is then (ScheduleChangedError after CHANGE_ATTEMPTS such).
   */
  async update(schedule: StoredSchedule, change: Partial<ScheduleInput>): Promise<ScheduleView | undefined> {
    const { tenant, id } = schedule;
    if (change.paused === false && !this.options.tenantActive(tenant)) throw new TenantGoneError(tenant);
    assertSigned(this.options.canSign, tenant, change.task?.webhook !== undefined);
    const task = change.task ? stored(change.task) : undefined;
    let current: StoredSchedule | undefined = schedule;
    for (let attempt = 0; current && attempt < CHANGE_ATTEMPTS; attempt++) {
      const next = changed(current, change, task);
      if (next.bytes > current.bytes)
        await this.options.admission.admit({ tenant, action: 'schedule', bytes: next.bytes - current.bytes });
      const saved = await this.options.schedules.save(next, {
        mode: 'update',
        files: task?.files,
        limits: this.options.room(tenant),
        previousBytes: current.bytes,
      });
      if (saved !== 'changed') {
        await followRecord(this.timerSync, id);
        return saved && this.view(saved);
      }
      current = await this.options.schedules.get(id);
    }
    if (!current) return undefined;
    throw new ScheduleChangedError(id);
  }

  /** Removes it, its files and runs (its bytes go back to its tenant), then its timer. */
  async remove(schedule: StoredSchedule): Promise<void> {
    // The record first: a process killed before the timer leaves one that finds no schedule and goes.
    await this.options.schedules.remove(schedule);
    await followRecord(this.timerSync, schedule.id);
  }

  /** A firing: submits the schedule's task, or says why not. Never throws for a run it could not make. */
  async fire(firing: Firing): Promise<void> {
    const { schedules } = this.options;
    const { scheduleId: id } = firing;
    const schedule = await schedules.get(id);
    // Deleted or paused since it was due, or due on a timing the schedule no longer has (a job already
    // due when it changed, a timer left by a process killed mid-change): nothing runs, and its timer
    // is put right.
    if (!schedule || schedule.paused || firing.timing !== timingKey(timingOf(schedule)))
      return followRecord(this.timerSync, id);
    const when = new Date(firing.at).toISOString();
    const skip = (reason: string) => schedules.recordRun(id, { at: when, taskId: null, skipped: reason });
    if (!this.options.tenantActive(schedule.tenant)) {
      // Revoked: paused with the reason, and its timer stopped, so that nothing fires for it again.
      const reason = schedulesStopped(schedule.tenant);
      await schedules.recordRun(id, { at: when, taskId: null, skipped: reason }, reason);
      await followRecord(this.timerSync, id);
      return;
    }
    if (schedule.overlap === 'skip' && schedule.lastTaskId) {
      const last = await this.options.tasks.getRecord(schedule.lastTaskId);
      if (last && !TERMINAL_STATUSES.has(last.status))
        return skip(`the last run's task ${last.id} is ${last.status} (overlap: skip)`);
    }
    const files = await schedules.files(id);
    const task = JSON.parse(schedule.task) as Record<string, unknown>;
    const parsed = taskInputSchema.safeParse(
      files.length
        ? { ...task, files: files.map((file) => ({ path: file.path, content: file.content.toString('base64') })) }
        : task,
    );
    if (!parsed.success)
      return skip(`its task is no longer valid: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`);
    try {
      const submitted = await this.options.submit(schedule.tenant, parsed.data, id);
      await schedules.recordRun(id, { at: when, taskId: submitted.id, skipped: null });
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
      pausedReason: schedule.paused ? (schedule.pausedReason ?? null) : null,
      task: JSON.parse(schedule.task) as Record<string, unknown>,
      createdAt: schedule.createdAt,
      nextRunAt: next === undefined ? null : new Date(next).toISOString(),
      lastRuns,
    };
  }
}

/** A task as a schedule stores it: its files' contents apart, the task naming each file and its size. */
function stored(task: Record<string, unknown>): { task: string; files: ScheduleFile[] } {
  if (!Array.isArray(task.files)) return { task: JSON.stringify(task), files: [] };
  const files = (task.files as Array<{ path: string; content: string }>).map((file) => ({
    path: file.path,
    content: Buffer.from(file.content, 'base64'),
  }));
  const named = files.map((file) => ({ path: file.path, size: file.content.length }));
  return { task: JSON.stringify({ ...task, files: named }), files };
}

function inputTiming(input: Partial<ScheduleInput>): Pick<StoredSchedule, 'cron' | 'timezone' | 'every'> {
  return input.cron !== undefined
    ? { cron: input.cron, ...(input.timezone ? { timezone: input.timezone } : {}) }
    : { every: input.every! };
}

/** The record `change` makes of `current` (`task`: the change's task as stored). */
function changed(
  current: StoredSchedule,
  change: Partial<ScheduleInput>,
  task: { task: string; files: ScheduleFile[] } | undefined,
): StoredSchedule {
  const retimed = change.cron !== undefined || change.every !== undefined;
  const { pausedReason: _reason, ...kept } = current;
  return {
    ...(change.paused === false ? kept : current),
    ...(retimed ? { cron: undefined, timezone: undefined, every: undefined, ...inputTiming(change) } : {}),
    ...(!retimed && change.timezone !== undefined ? { timezone: change.timezone } : {}),
    ...(change.overlap ? { overlap: change.overlap } : {}),
    ...(change.paused !== undefined ? { paused: change.paused } : {}),
    ...(task ? { task: task.task, bytes: scheduleBytes(task.task, inputFilesBytes(task.files)) } : {}),
  };
}

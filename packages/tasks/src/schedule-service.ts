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
 */
import { AgentqError, TERMINAL_STATUSES, type ScheduleView } from '@agentq/contract';
import type { ScheduleTimers, ScheduleTiming } from '@agentq/scheduling';
import {
  DEFAULT_TENANT,
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
import { assertSigned, type CanSign } from './signed-webhooks.js';
import { taskInputSchema, type TaskInput } from './task-schemas.js';
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

/**
 * Whether a tenant can still call the API, as the configuration file's keys say: a key names it, or the
 * file has no keys and it is `default` (everyone's). A schedule of any other tenant makes no more tasks.
 */
export function tenantHasKeys(keys: ReadonlyArray<{ tenant: string }>, tenant: string): boolean {
  return keys.length ? keys.some((key) => key.tenant === tenant) : tenant === DEFAULT_TENANT;
}

/** A schedule of a tenant that left the configuration file cannot be resumed (a 409). */
export class TenantGoneError extends AgentqError {
  readonly code = 'tenant_gone';
  readonly retryable = false;
  constructor(readonly tenant: string) {
    super(tenantGone(tenant));
  }
}

function tenantGone(tenant: string): string {
  return `tenant ${tenant} is no longer in the configuration file (no key of tenants.${tenant}): its schedules make no tasks and stay paused; once the tenant is back, resume them (PATCH paused: false)`;
}

export interface ScheduleServiceOptions {
  schedules: ScheduleStore;
  timers: ScheduleTimers;
  tasks: TaskStore;
  /** Whether a tenant is still in the configuration file (tenantHasKeys). */
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
  constructor(private readonly options: ScheduleServiceOptions) {}

  async create(tenant: string, input: ScheduleInput): Promise<ScheduleView> {
    assertSigned(this.options.canSign, tenant, input.task.webhook !== undefined);
    const { task, files } = stored(input.task);
    const schedule = {
      id: `sch_${randomUUID()}`,
      tenant,
      ...timingOf(input),
      overlap: input.overlap ?? 'skip',
      paused: input.paused ?? false,
      task,
      createdAt: new Date().toISOString(),
      bytes: scheduleBytes(task, inputFilesBytes(files)),
    } satisfies Omit<StoredSchedule, 'order'>;
    await this.options.admission.admit({ tenant, action: 'schedule', bytes: schedule.bytes });
    const saved = await this.options.schedules.save(schedule, {
      mode: 'create',
      files,
      maxSchedules: this.options.maxSchedules(tenant),
      limits: this.options.room(tenant),
    });
    if (!schedule.paused) await this.options.timers.set(schedule.id, timing(schedule));
    return this.view(saved!);
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
   */
  async update(schedule: StoredSchedule, change: Partial<ScheduleInput>): Promise<ScheduleView | undefined> {
    const { tenant } = schedule;
    const resumed = change.paused === false;
    if (resumed && !this.options.tenantActive(tenant)) throw new TenantGoneError(tenant);
    assertSigned(this.options.canSign, tenant, change.task?.webhook !== undefined);
    const retimed = change.cron !== undefined || change.every !== undefined;
    const task = change.task ? stored(change.task) : undefined;
    const { pausedReason: _reason, ...kept } = schedule;
    const next: StoredSchedule = {
      ...(resumed ? kept : schedule),
      ...(retimed ? { cron: undefined, timezone: undefined, every: undefined, ...timingOf(change) } : {}),
      ...(!retimed && change.timezone !== undefined ? { timezone: change.timezone } : {}),
      ...(change.overlap ? { overlap: change.overlap } : {}),
      ...(change.paused !== undefined ? { paused: change.paused } : {}),
      ...(task ? { task: task.task, bytes: scheduleBytes(task.task, inputFilesBytes(task.files)) } : {}),
    };
    if (next.bytes > schedule.bytes)
      await this.options.admission.admit({ tenant, action: 'schedule', bytes: next.bytes - schedule.bytes });
    const saved = await this.options.schedules.save(next, {
      mode: 'update',
      files: task?.files,
      limits: this.options.room(tenant),
      previousBytes: schedule.bytes,
    });
    if (!saved) return undefined;
    if (saved.paused) await this.options.timers.remove(saved.id);
    else await this.options.timers.set(saved.id, timing(saved));
    return this.view(saved);
  }

  /** Stops its timer and removes it, its files and runs; its bytes go back to its tenant. */
  async remove(schedule: StoredSchedule): Promise<void> {
    await this.options.timers.remove(schedule.id);
    await this.options.schedules.remove(schedule);
  }

  /** A firing: submits the schedule's task, or says why not. Never throws for a run it could not make. */
  async fire(id: string, at: number): Promise<void> {
    const { schedules } = this.options;
    const schedule = await schedules.get(id);
    // Deleted or paused since the firing was due: nothing runs.
    if (!schedule || schedule.paused) return;
    const when = new Date(at).toISOString();
    const skip = (reason: string) => schedules.recordRun(id, { at: when, taskId: null, skipped: reason });
    if (!this.options.tenantActive(schedule.tenant)) {
      // Revoked: paused with the reason, and its timer stopped, so that nothing fires for it again.
      const reason = tenantGone(schedule.tenant);
      await schedules.recordRun(id, { at: when, taskId: null, skipped: reason }, reason);
      await this.options.timers.remove(id);
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

function timingOf(input: Partial<ScheduleInput>): Pick<StoredSchedule, 'cron' | 'timezone' | 'every'> {
  return input.cron !== undefined
    ? { cron: input.cron, ...(input.timezone ? { timezone: input.timezone } : {}) }
    : { every: input.every! };
}

function timing(schedule: Pick<StoredSchedule, 'cron' | 'timezone' | 'every'>): ScheduleTiming {
  return schedule.cron !== undefined
    ? { cron: schedule.cron, timezone: schedule.timezone }
    : { every: schedule.every! };
}

/** Schedules: a task submitted again and again, on a cron pattern or every so many milliseconds. */

/** One time a schedule fired: the task it submitted, or why it submitted none. */
export interface ScheduleRunView {
  at: string;
  taskId: string | null;
  /** Why no task was submitted (the last run had not ended, a tenant limit...); null when one was. */
  skipped: string | null;
}

/** A schedule as `GET /v1/schedules/:id` and `GET /v1/schedules` show it. */
export interface ScheduleView {
  id: string;
  tenant: string;
  /** A cron pattern (5 or 6 fields) and its time zone (default UTC), or `every` milliseconds. */
  cron: string | null;
  timezone: string | null;
  every: number | null;
  /** `skip`: a run is skipped while the last one has not ended; `allow`: runs may overlap. */
  overlap: 'skip' | 'allow';
  paused: boolean;
  /** Why agentq paused it (its tenant left the configuration file); null when it runs, or a client paused it. */
  pausedReason: string | null;
  /**
   * The task each run submits, as a submit takes it, but its `files` as `[{path, size}]`: their contents
   * are stored and given to each run, never served back.
   */
  task: Record<string, unknown>;
  createdAt: string;
  /** When it fires next; null while paused. */
  nextRunAt: string | null;
  /** Its last runs, newest first (at most 20). */
  lastRuns: ScheduleRunView[];
}

/** A page of `GET /v1/schedules`, newest first: `nextCursor` (null on the last page) asks for the next. */
export interface SchedulePageView {
  schedules: ScheduleView[];
  nextCursor: string | null;
}

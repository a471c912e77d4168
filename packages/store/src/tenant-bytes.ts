/**
 * What a tenant's tasks wrote to Redis, counted per tenant (`tenant:<t>:bytes`) so that limits.mb
 * can bound it: a count of tasks does not bound their size, and a tenant's prompts, tool outputs and
 * answers could otherwise take the memory every tenant shares.
 *
 * Counted as written, before compaction, by the scripts that write (commit-script.ts), on the task's
 * record (`bytes`) and its tenant's count at once: CREATE counts a new task's `createdBytes` and its
 * input files' `inputFilesBytes` (paths too: 100 empty files of 1,000-byte paths are 100 KB); a commit
 * that appends messages or events, what it writes (a claim's few fields are not counted). New tasks must
 * fit under the limit (tenant-room.ts); past it, the tenant's runs stop at their next step (a queued
 * task at its claim, before any model call), as at a spent daily limit. A task's removal takes its
 * `bytes` off in the script that removes it, so that two removals at once take it off once.
 *
 * A schedule stores a task (its files too) for as long as it lives: its bytes (`scheduleBytes`) count
 * in its tenant's counter of the schedules' cell (keys.ts), taken in the script that saves it and given
 * back by the one that removes it, so that schedules are no way round limits.mb.
 */

/** A new task's record, first event and index entries, past its prompt and metadata: about this many bytes. */
const RECORD_BYTES = 512;

/** The fields of a new task whose size createdBytes counts. */
export const CREATED_FIELDS = ['prompt', 'metadata', 'givenPlan'] as const;

/** What creating a task writes, counted: its prompt, its metadata (JSON), its given plan (JSON) and RECORD_BYTES. */
export function createdBytes(task: Record<string, string | undefined>): number {
  return createdBytesOfSizes(CREATED_FIELDS.map((field) => Buffer.byteLength(task[field] ?? '')));
}

/** createdBytes of a task whose CREATED_FIELDS have these sizes, in bytes (as HSTRLEN says them). */
export function createdBytesOfSizes(sizes: readonly number[]): number {
  return sizes.reduce((total, size) => total + size, RECORD_BYTES);
}

/** An input file's entry in its task's hash past its path and content (Redis's own overhead): about this many bytes. */
const INPUT_FILE_BYTES = 64;

/** What input files write, counted: each one's path (UTF-8), its content and INPUT_FILE_BYTES. */
export function inputFilesBytes(files: ReadonlyArray<{ path: string; content: Uint8Array }> | undefined): number {
  return (files ?? []).reduce(
    (total, file) => total + Buffer.byteLength(file.path) + file.content.length + INPUT_FILE_BYTES,
    0,
  );
}

/** The runs a schedule keeps (schedule-store.ts), and the most a run's record holds (its reason is cut to fit). */
export const SCHEDULE_KEPT_RUNS = 20;
export const SCHEDULE_RUN_BYTES = 512;
/** A schedule's record past its task, its index entries, and its last runs: about this many bytes. */
const SCHEDULE_RECORD_BYTES = 1024 + SCHEDULE_KEPT_RUNS * SCHEDULE_RUN_BYTES;

/**
 * What a schedule holds in Redis, counted toward its tenant's bytes (limits.mb) as a task's are: its
 * task as stored (JSON, its files named but not held), its files (`inputFilesBytes`: their hash holds
 * their paths again), and its record and runs.
 */
export function scheduleBytes(task: string, fileBytes: number): number {
  return Buffer.byteLength(task) + fileBytes + SCHEDULE_RECORD_BYTES;
}

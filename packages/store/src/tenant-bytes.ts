/**
 * What a tenant's tasks wrote to Redis, counted per tenant (`tenant:<t>:bytes`) so that limits.mb
 * can bound it: a count of tasks does not bound their size, and a tenant's prompts, tool outputs and
 * answers could otherwise take the memory every tenant shares.
 *
 * Counted as written, before compaction, by the scripts that write (commit-script.ts), on the task's
 * record (`bytes`) and its tenant's count at once: CREATE counts a new task's `createdBytes`; a commit
 * that appends messages or events, what it writes (a claim's few fields are not counted). New tasks must
 * fit under the limit (tenant-room.ts); past it, the tenant's runs stop at their next step (a queued
 * task at its claim, before any model call), as at a spent daily limit. A task's removal takes its
 * `bytes` off in the script that removes it, so that two removals at once take it off once.
 */

/** A new task's record, first event and index entries, past its prompt and metadata: about this many bytes. */
const RECORD_BYTES = 512;

/** What creating a task writes, counted: its prompt, its metadata (JSON), its given plan (JSON) and RECORD_BYTES. */
export function createdBytes(task: Record<string, string | undefined>): number {
  return (
    Buffer.byteLength(task['prompt'] ?? '') +
    Buffer.byteLength(task['metadata'] ?? '') +
    Buffer.byteLength(task['givenPlan'] ?? '') +
    RECORD_BYTES
  );
}

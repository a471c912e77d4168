/**
 * Each status's stored code: its band in the task lists' scores (task-index.ts), `code * STATUS_SPAN +
 * order`. Stored scores depend on these numbers, so they are written here, not taken from a status's
 * place in TASK_STATUSES (a status added in the middle of that list would have moved every stored
 * score). A status keeps its code for ever; a new one takes an unused code, and the compiler asks for
 * it here (every TaskStatus must be named).
 *
 * The statuses not ended have the lowest codes, so that one score range holds a tenant's unfinished
 * tasks (one ZCOUNT, in the scripts too): an unfinished status added later needs a code below the ended
 * ones, which moves their bands, and so a storage migration (migrations/).
 */
import { TERMINAL_STATUSES, type TaskStatus } from '@agentq/contract';

export const STATUS_CODES = {
  pending: 0,
  queued: 1,
  running: 2,
  waiting: 3,
  completed: 4,
  failed: 5,
  skipped: 6,
  cancelled: 7,
} as const satisfies Record<TaskStatus, number>;

/** One past the highest code: the bands a list's scores use. */
export const STATUS_CODE_COUNT = Math.max(...Object.values(STATUS_CODES)) + 1;

/** The bands below this code are the statuses not ended. */
export const UNFINISHED_CODES = Math.min(
  ...Object.entries(STATUS_CODES)
    .filter(([status]) => TERMINAL_STATUSES.has(status as TaskStatus))
    .map(([, code]) => code),
);

const statuses = Object.entries(STATUS_CODES) as Array<[TaskStatus, number]>;
if (new Set(statuses.map(([, code]) => code)).size !== statuses.length)
  throw new Error('STATUS_CODES: two statuses share a code');
if (statuses.some(([status, code]) => !TERMINAL_STATUSES.has(status) && code >= UNFINISHED_CODES))
  throw new Error('STATUS_CODES: every status not ended must have a lower code than every ended one');

/** The status a stored code stands for (undefined: none). */
export function statusOfCode(code: number): TaskStatus | undefined {
  return statuses.find(([, known]) => known === code)?.[0];
}

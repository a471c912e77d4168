/** Names every package agrees on: the default tenant, and what a task id looks like. */
/** The tenant of tasks submitted without API keys, and of keys that name none. */
export const DEFAULT_TENANT = 'default';

/**
 * What a task id looks like: a UUID; for a plan's subtask `<root>.v<plan version>.s<n>`; for a child a
 * `delegate` call started, `<parent>.c<step>.<n>` (at most the contract's MAX_TASK_DEPTH, 10, below its root).
 */
export const TASK_ID_PATTERN =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:\.v\d{1,6}\.s\d{1,6})?(?:\.c\d{1,6}\.\d{1,3}){0,10}$/;

/** The id of the `n`th child (from 1) a `delegate` call of step `step` of `parentId` starts. */
export function childTaskId(parentId: string, step: number, n: number): string {
  return `${parentId}.c${step}.${n}`;
}

export function isTaskId(value: string): boolean {
  return TASK_ID_PATTERN.test(value);
}

/** The root task of a task: a subtask's id begins with its root's (`<root>.v1.s2`); a root is its own. */
export function rootOf(taskId: string): string {
  const dot = taskId.indexOf('.');
  return dot === -1 ? taskId : taskId.slice(0, dot);
}

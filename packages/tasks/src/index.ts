// What other packages and apps use of the task service. Its actions (submit, retry, fork, cancel,
// answer, decide) are TaskService's methods only, each through the one admission gate: never exported
// beside it (tests/unit/tasks-exports.test.ts).
export { composeInstall, installSettings } from './compose.js';
export type { Install } from './compose.js';
export { ForkError, forkDiskQuota } from './fork-task.js';
export { createRedisJournal } from './redis-journal.js';
export type { RedisJournal } from './redis-journal.js';
export { RETRYABLE } from './retry-task.js';
export { EnqueueError } from './submit-tasks.js';
export { releaseSubtasks, startPlan } from './subtasks.js';
export { fieldsOnly, forkSchema, MAX_PROMPT_BYTES, taskInputSchema } from './task-schemas.js';
export type { TaskInput } from './task-schemas.js';
export { taskDigest } from './request-digest.js';
export { Transitions } from './transitions.js';
export type { ByRun, RequeueReason, SubmittedTask, TaskRef } from './transitions.js';
export { TaskService } from './task-service.js';
export type { BulkTask } from './task-service.js';
export { DailyLimitError, RedisFullError } from './admission.js';
export { ScheduleService } from './schedule-service.js';
export { tenantGone } from './tenant-presence.js';
export { expireApprovals } from './decide-approval.js';
export { onChildFinished } from './child-finished.js';
export { childrenAnswer, ChildrenRefused, startChildren, resumeParentIfDone, type ChildInput } from './child-tasks.js';
export { inputPathProblem } from './input-paths.js';

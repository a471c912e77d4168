export { closeQueues, createAgentQueues, UnknownPoolError } from './agent-queues.js';
export type { AgentQueues } from './agent-queues.js';
export { enqueue, readJob } from './jobs.js';
export type { JobPayload } from './jobs.js';
export { SharedRateLimits } from './rate-limits.js';
export type { ModelLimit } from './rate-limits.js';
export { fireSchedules, ScheduleTimers } from './schedule-timers.js';
export type { ScheduleTiming } from './schedule-timers.js';
export { ConcurrencyGate } from './concurrency-gate.js';

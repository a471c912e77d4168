export { compactEvents } from './compact-events.js';
export { EventHub } from './event-hub.js';
export type { LiveEvent } from './event-hub.js';
export { EVENT_PAGE } from './event-pages.js';
export { expireTasks } from './expire-tasks.js';
export { FinishedJobs, readFinishedJobs } from './finished-jobs.js';
export { idempotencyMismatches } from './idempotency-keys.js';
export type { KeyedTask } from './idempotency-keys.js';
export type { FinishedSeries, JobOutcome } from './finished-jobs.js';
export { PRIORITY_STEP } from './fair-lists.js';
export { cellNumber, concurrencyBase, createKeys, keySlot, newTaskId } from './keys.js';
export type { CellKeys, Keys } from './keys.js';
export { cellPipeline } from './cell-pipeline.js';
export { CellCountChangedError } from './cell-count.js';
export { cellsPerMaster, clusterSlotOwners, recordedCellCount, spreadingCellCount } from './cluster-cells.js';
export type { SlotOwners } from './cluster-cells.js';
export { closeConnection, connectRedis, redisReady, settledWithin, watchRedis } from './redis-connection.js';
export { RedisMemory, evictionWarning, isRedisOutOfMemory, readRedisMemory, warnIfEvicting } from './redis-memory.js';
export type { RedisFull } from './redis-memory.js';
export { createRedisScratchpad } from './redis-scratchpad.js';
export { removeLeftWorkdirs, removeTaskTrees, unendedInTrees } from './remove-tasks.js';
export type { StoredEvent } from './task-events.js';
export { DEFAULT_TENANT, TASK_ID_PATTERN, childTaskId, isTaskId } from './task-ids.js';
export { STATUS_SPAN, countByStatus, countUnfinished, indexScore, newestInIndex, statusBand } from './task-index.js';
export {
  budgetSpent,
  decisionsOf,
  depthOf,
  isQuestion,
  parseTaskRecord,
  recordHash,
  webhookEventsOf,
  webhookOnField,
} from './task-record.js';
export type {
  Pending,
  PendingApproval,
  PendingChildren,
  PendingQuestion,
  StepDecisions,
  StoredSubtask,
  TaskRecord,
} from './task-record.js';
export { CREATE_BATCH, CommitNotReplicated, TaskStore } from './task-store.js';
export type {
  CommitOptions,
  StoreOptions,
  CommitOutcome,
  CommitResult,
  LeasedTask,
  NewTask,
  SpendingStop,
  StoredEventInput,
} from './task-store.js';
export { createdBytes, inputFilesBytes, scheduleBytes } from './tenant-bytes.js';
export { assertRoom, NoRoomError } from './tenant-room.js';
export {
  EventsChangedError,
  IdempotencyMismatchError,
  KeysChangedError,
  RoomHoldLostError,
  TaskMissingError,
} from './store-errors.js';
export type { IdempotencyMismatch } from './store-errors.js';
export type { Room, RoomLimits } from './tenant-room.js';
export { tenantLimitReached } from './tenant-spending.js';
export { readRoomUsage, tenantUsage } from './tenant-usage.js';
export { HEARTBEAT_TTL_MS, onlineWorkers, removeHeartbeat, sendHeartbeat } from './worker-registry.js';
export { STATUS_CODES } from './status-codes.js';
export { migrateStorage, STORAGE_VERSION, StorageTooNewError, storageVersion } from './migrations/migrate-storage.js';
export { moveTaskLists } from './migrations/0001-task-lists-by-status-score.js';
export { luaScript } from './lua-script.js';
export { isCluster, onMessage, publish, subscribe, unsubscribe } from './pub-sub.js';
export type { LuaArg, LuaCall, LuaScript } from './lua-script.js';
export { WebhookDeliveries, deliveryTask } from './webhook-deliveries.js';
export type { ClaimedDelivery, DeliveryWrite, ResendOutcome, StoredDelivery } from './webhook-deliveries.js';
export { inputFiles } from './input-files.js';
export { ScheduleLimitError, ScheduleStore } from './schedule-store.js';
export type { ScheduleFile, SchedulePage, ScheduleRecord, StoredSchedule } from './schedule-store.js';
export { giveBackTreeRoom, takeTreeRoom } from './tree-room.js';

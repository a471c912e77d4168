/** The store's errors: conditions of what Redis holds that a caller handles. */
import { AgentqError } from '@agentq/contract';

/** A task a step needs is gone: deleted, or past its retention. Trying again finds it gone again. */
export class TaskMissingError extends AgentqError {
  readonly code = 'task_missing';
  readonly retryable = false;
  constructor(
    readonly taskId: string,
    message = `Task ${taskId} is gone (deleted, or its retention ended)`,
  ) {
    super(message);
  }
}

/**
 * A later call of a submit stored over several calls found no room held for it: its first call was
 * refused, or came longer ago than a hold lasts (tenant-room.ts). The submit can be sent again.
 */
export class RoomHoldLostError extends AgentqError {
  readonly code = 'room_hold_lost';
  readonly retryable = true;
}

/** A task's compacted events were replaced while they were read (event-pages.ts reads them again). */
export class EventsChangedError extends AgentqError {
  readonly code = 'events_changed';
  readonly retryable = true;
}

/** Keys a script was given changed before it ran (two writers at once), again and again: try later. */
export class KeysChangedError extends AgentqError {
  readonly code = 'keys_changed';
  readonly retryable = true;
}

/** A task whose idempotency key already names a live task made from another body (`index`: its place in the request). */
export interface IdempotencyMismatch {
  index: number;
  idempotencyKey: string;
  /** The task the key names. */
  taskId: string;
}

/**
 * Idempotency keys sent again with another body than the one that made their task: nothing of the
 * request was made (but `created`). The same request fails the same way, so it is not retried.
 */
export class IdempotencyMismatchError extends AgentqError {
  readonly code = 'idempotency_mismatch';
  readonly retryable = false;
  constructor(
    readonly mismatches: readonly IdempotencyMismatch[],
    /**
     * The request's tasks its other CREATE calls stored (a key stored with another body by another request
     * between the submit's check and its calls): where each is in the request, and its id.
     */
    readonly created: ReadonlyArray<{ index: number; id: string }> = [],
  ) {
    super(
      mismatches
        .map(
          ({ index, idempotencyKey, taskId }) =>
            `tasks[${index}].idempotencyKey ${JSON.stringify(idempotencyKey)} names task ${taskId}, made from another body`,
        )
        .join('; '),
    );
  }
}

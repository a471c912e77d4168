/**
 * A task's tree as one event stream (`GET /v1/tasks/:id/events?descendants=true`): the task's events and
 * every descendant's, each with its own `taskId` and `seq` (a seq numbers one task's events). Where a
 * reader is is a cursor that says, per task, the seq of the last event it has:
 *
 *   12,c3.1:5,c3.1.c2.1:7,v1.s2:3
 *
 * The followed task's seq first, then `<id>:<seq>` for each descendant, its id written without the
 * followed task's id and its dot (`c3.1` is `<task>.c3.1`). A task not named is read from its start; a
 * cursor of one number is a plain stream's. Each SSE message's `id:` is the cursor after it, so
 * `Last-Event-ID` resumes the whole tree; a client that reads JSON builds it from the events' `taskId`
 * and `seq`.
 */
import { AgentqError } from './agentq-error.js';
import type { StreamedEvent } from './events.js';

/** Tasks one tree stream follows, at most (the first found, breadth-first): a subtree's own stream has the rest. */
export const TREE_TASK_LIMIT = 500;

/**
 * Bytes the tree's cursor may take (what it says of its descendants), so that `Last-Event-ID` stays well
 * inside a server's header limit (Node's is 16 KiB): deep ids take more of it than shallow ones.
 */
export const TREE_CURSOR_BYTES = 12_000;

/**
 * Sent once (SSE `event: tree.limit`, no `id:`) when the tree holds more than one stream follows:
 * `taskId`, the first task left out (follow its own tree, or its parent's, for the rest).
 */
export interface TreeLimitNotice {
  type: 'tree.limit';
  limit: number;
  taskId: string;
}

/** What a tree's stream carries: every task's events and live deltas, and at most one notice of its limit. */
export type TreeStreamedEvent = StreamedEvent | TreeLimitNotice;

/** A cursor that is not one: the client's mistake (the API answers 400). */
export class TreeCursorError extends AgentqError {
  readonly code = 'invalid_request';
  readonly retryable = false;
}

/** A descendant's id without its ancestor's: a subtask's `v1.s2`, a child's `c3.1`, and deeper (`c3.1.c2.1`). */
const SUFFIX = /^(?:v\d{1,6}\.s\d{1,6}|c\d{1,6}\.\d{1,3})(?:\.c\d{1,6}\.\d{1,3}){0,10}$/;
const SEQ = /^\d{1,15}$/;

/**
 * The seq each task of `taskId`'s tree was read to, from a cursor (see above); a task not named is at 0.
 * Throws TreeCursorError for anything else: a bad part, a task named twice, more parts than a stream follows.
 *
 * @example treeCursorOf('a1…', '12,c3.1:5') // Map { 'a1…' => 12, 'a1….c3.1' => 5 }
 */
export function treeCursorOf(taskId: string, text: string): Map<string, number> {
  if (text.length > TREE_CURSOR_BYTES + 32)
    throw new TreeCursorError(`is ${text.length} characters; a tree's cursor is at most ${TREE_CURSOR_BYTES}`);
  const [own = '', ...parts] = text.split(',');
  if (!SEQ.test(own)) throw new TreeCursorError(`must start with a seq, a whole number such as 12`);
  if (parts.length >= TREE_TASK_LIMIT)
    throw new TreeCursorError(`names ${parts.length} descendants; a tree's stream follows ${TREE_TASK_LIMIT} tasks`);
  const seqs = new Map([[taskId, Number(own)]]);
  for (const part of parts) {
    const colon = part.lastIndexOf(':');
    const suffix = part.slice(0, colon);
    const seq = part.slice(colon + 1);
    if (colon === -1 || !SUFFIX.test(suffix) || !SEQ.test(seq))
      throw new TreeCursorError(
        `has ${JSON.stringify(part.slice(0, 40))}: each descendant is <id without the task's>:<seq>, such as c3.1:5`,
      );
    const id = `${taskId}.${suffix}`;
    if (seqs.has(id)) throw new TreeCursorError(`names ${suffix} twice`);
    seqs.set(id, Number(seq));
  }
  return seqs;
}

/** The cursor of `taskId`'s tree read to `seqs` (task id to seq; a task at 0 is left out). */
export function treeCursorText(taskId: string, seqs: Iterable<readonly [string, number]>): string {
  let own = 0;
  const parts: string[] = [];
  for (const [id, seq] of seqs) {
    if (id === taskId) own = seq;
    else if (seq > 0 && id.startsWith(`${taskId}.`)) parts.push(`${id.slice(taskId.length + 1)}:${seq}`);
  }
  return [String(own), ...parts].join(',');
}

/** The bytes a descendant takes in its tree's cursor, at most (its seq at 6 digits: a million events). */
export function cursorBytesOf(taskId: string, descendantId: string): number {
  return descendantId.length - taskId.length + 8;
}

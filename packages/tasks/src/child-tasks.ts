/**
 * Child tasks a `delegate` call starts, and how their parent goes on once they have ended. A child knows
 * its parent, root and depth; its parent lists it in `children`. Its id is keyed by its parent's call
 * (childTaskId), and it is made at most once, so a run that calls again after a crash makes none twice.
 * The parent's run ends waiting (interrupt `children`), holding no worker; the last child to end, or the
 * parent's own wait if they all ended before it, queues the parent again with the call's answer: each
 * child's status and answer. Every step is idempotent (made once, guarded status changes), so whoever
 * runs one again after a crash loses nothing and repeats nothing.
 */
import { TERMINAL_STATUSES } from '@agentq/contract';
import { QUOTED_TEXT_RULE, quoted } from '@agentq/core';
import type { Message } from '@agentq/protocol';
import type { AgentQueues } from '@agentq/scheduling';
import {
  budgetSpent,
  childTaskId,
  depthOf,
  giveBackTreeRoom,
  NoRoomError,
  takeTreeRoom,
  type PendingChildren,
  type RoomLimits,
  type TaskRecord,
  type TaskStore,
} from '@agentq/store';
import { capOutput } from '@agentq/tools';
import { addNextRun, nextRun } from './next-run.js';
import { releaseSubtasks } from './subtasks.js';
import { Transitions } from './transitions.js';

/** What a `delegate` call may start (an agent's `delegate` settings). */
export interface ChildLimits {
  /** The deepest a child may be below its root. */
  maxDepth: number;
  /** Children one call may start. */
  maxChildren: number;
  /** Children every call in a root's tree may start, together. */
  maxDescendants: number;
}

export interface ChildInput {
  agent: string;
  prompt: string;
  /** Files for its folder (copied from its parent's). */
  inputs?: Array<{ path: string; content: Buffer }>;
}

/** A `delegate` call that may not start its children: what the model reads, to do otherwise. */
export class ChildrenRefused extends Error {}

/** Characters of each child's answer the parent's call is answered with (head and tail kept). */
export const CHILD_ANSWER_LIMIT = 4_000;

interface ChildOptions {
  store: TaskStore;
  queues: AgentQueues;
}

/**
 * Starts the children of call `step` of `parent`'s run (those of an earlier try of the same call are
 * kept, not made again), and queues them. Throws ChildrenRefused past a limit.
 */
export async function startChildren(
  options: ChildOptions & {
    parent: TaskRecord;
    step: number;
    children: readonly ChildInput[];
    limits: ChildLimits;
    /** The tenant's room: what the children store counts toward its `limits.mb`. */
    room?: RoomLimits;
  },
): Promise<string[]> {
  const { store, parent, limits } = options;
  const count = options.children.length;
  if (count === 0) throw new ChildrenRefused('Give `tasks` at least one task to start.');
  if (count > limits.maxChildren)
    throw new ChildrenRefused(
      `One delegate call may start at most ${limits.maxChildren} tasks; this one asked for ${count}. Start fewer (or fold several into one task).`,
    );
  const depth = depthOf(parent) + 1;
  if (depth > limits.maxDepth)
    throw new ChildrenRefused(
      `Tasks may not be started this deep (a child here would be ${depth} below the submitted task; at most ${limits.maxDepth} is allowed). Do the work yourself instead.`,
    );
  const root = parent.rootId === parent.id ? parent : await store.getRecord(parent.rootId);
  if (root && budgetSpent(root))
    throw new ChildrenRefused(
      'The budget of this task is spent: no more tasks can be started. Answer with what you have.',
    );
  const ids = options.children.map((_, index) => childTaskId(parent.id, options.step, index + 1));
  // Children of an earlier try of this call (its run stopped before it paused) are kept as they are.
  const exists = await Promise.all(ids.map((id) => store.redis.exists(store.keys.task(id))));
  const fresh = exists.filter((found) => !found).length;
  if (fresh > 0) {
    // Room in the root's tree, taken whole before they are made (a call that does not fit takes none).
    const room = await takeTreeRoom(store, parent.rootId, fresh, limits.maxDescendants);
    if (!room.taken)
      throw new ChildrenRefused(
        `This task's tree may start at most ${limits.maxDescendants} tasks in all, and ${room.before} were started already: ${fresh} more do not fit. Start fewer, or do the rest yourself.`,
      );
    let made: Awaited<ReturnType<Transitions['addChildren']>>;
    try {
      made = await new Transitions(store).addChildren(
        parent,
        options.children.map((child, index) => ({ ...child, id: ids[index]! })),
        options.room && { limits: options.room },
      );
    } catch (error) {
      await giveBackTreeRoom(store, parent.rootId, fresh);
      if (!(error instanceof NoRoomError)) throw error;
      const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
      throw new ChildrenRefused(
        `these tasks would store ${mib(error.bytes?.requested ?? 0)}, and this tenant's tasks have written ${mib(error.bytes?.used ?? 0)} of the ${mib(error.limits.bytes ?? 0)} they may: start fewer tasks, with shorter prompts and fewer files.`,
      );
    }
    // A child another try made meanwhile took no room.
    const already = made.filter((one, index) => one.outcome === 'existing' && !exists[index]).length;
    if (already > 0) await giveBackTreeRoom(store, parent.rootId, already);
  }
  // Listed as its children (again, if an earlier try made them and stopped before it listed them).
  const listed = new Set(parent.children ?? []);
  if (ids.some((id) => !listed.has(id)))
    await store.commit({
      taskId: parent.id,
      tenant: parent.tenant,
      fields: { children: JSON.stringify([...listed, ...ids.filter((id) => !listed.has(id))]) },
    });
  await releaseSubtasks({ ...options, taskIds: ids });
  return ids;
}

/** A child ended: its end shows in its parent's stream, and the parent goes on if it was the last. */
export async function onChildEnded(options: ChildOptions & { child: TaskRecord }): Promise<void> {
  const { child } = options;
  if (!child.parentId || !TERMINAL_STATUSES.has(child.status)) return;
  await resumeParentIfDone({ ...options, parentId: child.parentId });
}

/**
 * Queues a parent that waits for children once every one of them has ended, its call answered with
 * their results. Called by each child's end and by the parent's own wait; only one of them applies
 * (the change is written only if the parent is as its caller read it).
 */
export async function resumeParentIfDone(options: ChildOptions & { parentId: string }): Promise<boolean> {
  const { store } = options;
  const parent = await store.getRecord(options.parentId);
  const pending = parent?.pending;
  if (!parent || parent.status !== 'waiting' || pending?.kind !== 'children') return false;
  const children = await Promise.all(pending.children.map((id) => store.getRecord(id)));
  if (children.some((child) => child !== undefined && !TERMINAL_STATUSES.has(child.status))) return false;
  const message = childrenAnswer(pending, children);
  const run = nextRun(options.queues, parent);
  const result = await new Transitions(store).resume(parent, {
    message,
    step: parent.steps + 1,
    ...run,
    seq: parent.seq,
    why: {
      children: pending.children.map((id, index) => ({ id, status: children[index]?.status ?? 'deleted' })),
    },
  });
  if (!result.applied) return false;
  await addNextRun(options.queues, parent, run);
  return true;
}

/**
 * The answer of a `delegate` call: each child's status and answer as they stand (a `tool` result, native,
 * or a user message, fences). Also what a retry of a parent stopped while it waited is given (fork-journal).
 */
export function childrenAnswer(pending: PendingChildren, children: ReadonlyArray<TaskRecord | undefined>): Message {
  const report = childrenReport(pending.children, children);
  return pending.protocol === 'native'
    ? { role: 'tool', toolCallId: pending.callId, name: 'delegate', content: report }
    : { role: 'user', content: report };
}

/** What the parent's model reads of its children: each one's id, agent, status and answer or error. */
function childrenReport(ids: readonly string[], children: ReadonlyArray<TaskRecord | undefined>): string {
  const parts = ids.map((id, index) => {
    const child = children[index];
    if (!child) return `### ${id}: deleted before it ended (no result)`;
    const outcome =
      child.status === 'completed'
        ? capOutput(child.result ?? '', CHILD_ANSWER_LIMIT)
        : `${child.error?.message ?? 'no result'}${child.result ? `\nWhat it did: ${capOutput(child.result, CHILD_ANSWER_LIMIT)}` : ''}`;
    return `### ${id} (${child.agent}, ${child.status})\n${quoted(outcome)}`;
  });
  const ended = children.every((child) => !child || TERMINAL_STATUSES.has(child.status));
  const head = ended
    ? 'Every task you started has ended.'
    : 'The tasks you started, as they stand (some have not ended):';
  return `${head} ${QUOTED_TEXT_RULE}\n\n${parts.join('\n\n')}`;
}

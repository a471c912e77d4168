/**
 * A person's decision on a call that waits for approval (`POST /v1/tasks/:id/approvals`), or the time
 * limit's. Each call is decided once; the last decision of the step queues the task again, as a new job,
 * and its run does what was decided: an approved call runs, a rejected one is answered to the model with
 * the reason. Two decisions at once never lose one another: each is written only if the task is as its
 * decider read it (its last event), else read again. The last one queues its next run (next-run.ts).
 */
import type { ApprovalDecision, TaskStatus } from '@agentq/contract';
import type { AgentQueues } from '@agentq/scheduling';
import { decisionsOf, type TaskRecord, type TaskStore } from '@agentq/store';
import { addNextRun, nextRun } from './next-run.js';
import { Transitions } from './transitions.js';

export type DecideOutcome =
  | { kind: 'missing' }
  /** It waits for no approval (it ended, runs, or waits for an answer). */
  | { kind: 'not_waiting'; status: TaskStatus }
  /** No call of that id waits: `waiting` lists those that do. */
  | { kind: 'unknown_call'; waiting: string[] }
  | { kind: 'decided_already'; decision: ApprovalDecision }
  /** Written; `remaining` calls still wait (0: the task is queued again). */
  | { kind: 'decided'; remaining: number; status: TaskStatus };

/** How many times a decision is read again when another one came between. */
const RACES = 20;

export async function decideApproval(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
  callId: string;
  decision: ApprovalDecision;
  /** Refuses a task of another tenant as missing. */
  tenant?: string;
}): Promise<DecideOutcome> {
  const { store, taskId, callId, decision } = options;
  const transitions = new Transitions(store);
  for (let race = 0; race < RACES; race++) {
    const record = await store.getRecord(taskId);
    if (!record || (options.tenant !== undefined && record.tenant !== options.tenant)) return { kind: 'missing' };
    const pending = record.pending;
    if (record.status !== 'waiting' || pending?.kind !== 'approval')
      return { kind: 'not_waiting', status: record.status };
    const call = pending.calls.find((one) => one.id === callId);
    if (!call) return { kind: 'unknown_call', waiting: undecided(record).map((one) => one.id) };
    const decided = decisionsOf(record, pending);
    const already = decided.get(callId);
    if (already) return { kind: 'decided_already', decision: already };
    const calls = new Map(decided).set(callId, decision);
    const remaining = pending.calls.filter((one) => !calls.has(one.id)).length;
    const resume = remaining === 0 ? nextRun(options.queues, record) : undefined;
    const result = await transitions.decide(record, {
      seq: record.seq,
      decisions: { step: pending.step, calls },
      call,
      ...(resume ? { resume } : {}),
    });
    if (!result.applied) {
      if (result.outcome === 'missing') return { kind: 'missing' };
      continue;
    }
    if (resume) await addNextRun(options.queues, record, resume);
    return { kind: 'decided', remaining, status: resume ? 'queued' : 'waiting' };
  }
  throw new Error(`task ${taskId} changed ${RACES} times while a decision was written`);
}

/** The calls of a waiting task not decided yet. */
export function undecided(record: TaskRecord): Array<{ id: string; name: string }> {
  const pending = record.pending;
  if (record.status !== 'waiting' || pending?.kind !== 'approval') return [];
  const decided = decisionsOf(record, pending);
  return pending.calls.filter((call) => !decided.has(call.id));
}

/**
 * The time limit of step `step`'s approvals ran out: every call of it not decided yet is rejected. Does
 * nothing to a task that moved on (decided, cancelled, or waiting for a later step).
 */
export async function expireApprovals(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
  step: number;
}): Promise<number> {
  const record = await options.store.getRecord(options.taskId);
  if (!record || record.pending?.kind !== 'approval' || record.pending.step !== options.step) return 0;
  let expired = 0;
  for (const call of undecided(record)) {
    const outcome = await decideApproval({
      store: options.store,
      queues: options.queues,
      taskId: options.taskId,
      callId: call.id,
      decision: { approve: false, expired: true },
    });
    if (outcome.kind === 'decided') expired++;
  }
  return expired;
}

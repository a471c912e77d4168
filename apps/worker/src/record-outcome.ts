/** Writes how a run of the agent loop ended: the task's final status, its result or error, and the event. */
import type { ToolProtocolName } from '@agentq/contract';
import type { AgentOutcome, Interrupt } from '@agentq/core';
import type { ByRun, TaskRef, Transitions } from '@agentq/tasks';
import type { CommitResult, Pending } from '@agentq/store';

export function recordOutcome(options: {
  transitions: Transitions;
  task: TaskRef;
  by: ByRun;
  protocol: ToolProtocolName;
  outcome: AgentOutcome;
  /** When calls awaiting approval are rejected if nobody decided them (the agent's time limit). */
  approvalsExpireAt?: Date;
}): Promise<CommitResult> {
  const { transitions, task, by, outcome } = options;
  switch (outcome.status) {
    case 'completed':
      return transitions.complete(task, { ...by, result: outcome.answer, steps: outcome.steps });
    case 'failed':
      return transitions.fail(task, {
        ...by,
        error: { code: outcome.reason, message: outcome.message },
        steps: outcome.steps,
      });
    case 'cancelled':
      return transitions.cancel(task, { ...by, from: ['queued', 'running'], steps: outcome.steps });
    case 'interrupted':
      return transitions.wait(task, {
        ...by,
        pending: pendingOf(outcome.interrupt, options),
        steps: outcome.steps,
      });
  }
}

/** What a waiting task's record keeps of its interrupt: with how its call is answered (the protocol). */
function pendingOf(interrupt: Interrupt, options: { protocol: ToolProtocolName; approvalsExpireAt?: Date }): Pending {
  switch (interrupt.kind) {
    case 'question':
      return { kind: 'question', callId: interrupt.callId, protocol: options.protocol, question: interrupt.question };
    case 'approval':
      return {
        kind: 'approval',
        step: interrupt.step,
        calls: interrupt.calls,
        ...(options.approvalsExpireAt ? { expiresAt: options.approvalsExpireAt.toISOString() } : {}),
      };
    case 'children':
      return { kind: 'children', callId: interrupt.callId, protocol: options.protocol, children: interrupt.children };
  }
}

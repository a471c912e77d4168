/** Writes how a run of the agent loop ended: the task's final status, its result or error, and the event. */
import type { ToolProtocolName } from '@agentq/contract';
import type { AgentOutcome } from '@agentq/core';
import type { ByRun, TaskRef, Transitions } from '@agentq/tasks';
import type { CommitResult } from '@agentq/store';

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
    case 'waiting':
      return transitions.wait(task, {
        ...by,
        pending: { callId: outcome.callId, protocol: options.protocol, question: outcome.question },
        steps: outcome.steps,
      });
    case 'approval':
      return transitions.wait(task, {
        ...by,
        pending: {
          kind: 'approval',
          step: outcome.step,
          calls: outcome.calls,
          ...(options.approvalsExpireAt ? { expiresAt: options.approvalsExpireAt.toISOString() } : {}),
        },
        steps: outcome.steps,
      });
  }
}

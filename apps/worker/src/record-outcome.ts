/** Writes how a run of the agent loop ended: the task's final status, its result or error, and the event. */
import type { AgentOutcome } from '@agentq/core';
import type { TaskStore } from '@agentq/queue';

export async function recordOutcome(options: {
  store: TaskStore;
  taskId: string;
  runToken: string;
  agent: string;
  workerId: string;
  protocol: 'native' | 'fences';
  outcome: AgentOutcome;
}): Promise<void> {
  const { store, taskId, runToken, outcome } = options;
  const by = { agent: options.agent, worker: options.workerId };
  const finishedAt = new Date().toISOString();
  switch (outcome.status) {
    case 'completed':
      await store.commit({
        taskId,
        runToken,
        expect: ['running'],
        status: 'completed',
        fields: { finishedAt, result: outcome.answer },
        events: [{ type: 'task.completed', ...by, data: { result: outcome.answer, steps: outcome.steps } }],
      });
      return;
    case 'failed': {
      const error = { code: outcome.reason, message: outcome.message };
      await store.commit({
        taskId,
        runToken,
        expect: ['running'],
        status: 'failed',
        fields: { finishedAt, error: JSON.stringify(error) },
        events: [{ type: 'task.failed', ...by, data: { error, steps: outcome.steps } }],
      });
      return;
    }
    case 'cancelled':
      await store.commit({
        taskId,
        runToken,
        expect: ['queued', 'running'],
        status: 'cancelled',
        fields: { finishedAt },
        events: [{ type: 'task.cancelled', ...by, data: { steps: outcome.steps } }],
      });
      return;
    case 'waiting': {
      const pending = { callId: outcome.callId, protocol: options.protocol, question: outcome.question };
      await store.commit({
        taskId,
        runToken,
        expect: ['running'],
        status: 'waiting',
        fields: { pending: JSON.stringify(pending) },
        events: [{ type: 'task.waiting', ...by, data: { question: outcome.question, steps: outcome.steps } }],
      });
      return;
    }
  }
}

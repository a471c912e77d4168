/**
 * Answers a task that is `waiting` on a question from its model: the answer goes into memory the
 * way the question was asked (a `tool` result of the `ask_user` call, or a user message with fences),
 * and the task is queued again to resume where it stopped.
 */
import type { AgentPool, TaskStatus } from '@agentq/contract';
import type { Message } from '@agentq/protocol';
import { bullPriority, type AgentQueues } from './agent-queues.js';
import type { TaskStore } from './task-store.js';
import type { PendingQuestion } from './task-schemas.js';

export async function answerTask(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
  text: string;
}): Promise<{ found: boolean; status: TaskStatus | undefined; answered: boolean }> {
  const { store, taskId, text } = options;
  const record = await store.getRecord(taskId);
  if (!record) return { found: false, status: undefined, answered: false };
  if (record.status !== 'waiting' || !record.pending) return { found: true, status: record.status as TaskStatus, answered: false };
  const pending = JSON.parse(record.pending) as PendingQuestion;
  const answer: Message =
    pending.protocol === 'native'
      ? { role: 'tool', toolCallId: pending.callId, name: 'ask_user', content: `The user answered: ${text}` }
      : { role: 'user', content: text };
  const resumes = Number(record.resumes ?? 0) + 1;
  const jobId = `${taskId}-r${resumes}`;
  // The step that asked completes with its answer.
  const step = Number(record.steps ?? 0) + 1;
  const result = await store.commit({
    taskId,
    expect: ['waiting'],
    status: 'queued',
    fields: { jobId, resumes: String(resumes), pending: '' },
    messages: [answer],
    steps: step,
    events: [
      { type: 'step.completed', step, data: { step } },
      { type: 'task.queued', data: { answer: text } },
    ],
  });
  if (!result.applied) return { found: true, status: result.status, answered: false };
  const pool = record.agent as AgentPool;
  await options.queues[pool].add('agent', { taskId }, { jobId, priority: bullPriority(Number(record.priority ?? 5)) });
  return { found: true, status: 'queued', answered: true };
}

/**
 * Answers a task that is `waiting` on a question from its model: the answer goes into memory the
 * way the question was asked (a `tool` result of the `ask_user` call, or a user message with fences),
 * and the task is queued again, as its next run (next-run.ts), to resume where it stopped.
 */
import type { TaskStatus } from '@agentq/contract';
import type { Message } from '@agentq/protocol';
import type { AgentQueues } from '@agentq/scheduling';
import { isQuestion, type TaskStore } from '@agentq/store';
import { addNextRun, nextRun } from './next-run.js';
import { Transitions } from './transitions.js';

export async function answerTask(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
  text: string;
}): Promise<{ found: boolean; status: TaskStatus | undefined; answered: boolean }> {
  const { store, taskId, text } = options;
  const record = await store.getRecord(taskId);
  if (!record) return { found: false, status: undefined, answered: false };
  const pending = record.pending;
  // A task waiting for approvals or children is not waiting for an answer.
  if (record.status !== 'waiting' || !isQuestion(pending))
    return { found: true, status: record.status, answered: false };
  const message: Message =
    pending.protocol === 'native'
      ? { role: 'tool', toolCallId: pending.callId, name: 'ask_user', content: `The user answered: ${text}` }
      : { role: 'user', content: text };
  const run = nextRun(options.queues, record);
  // The step that asked completes with its answer.
  const result = await new Transitions(store).resume(record, {
    message,
    step: record.steps + 1,
    ...run,
    why: { answer: text },
  });
  if (!result.applied) return { found: true, status: result.status, answered: false };
  await addNextRun(options.queues, record, run);
  return { found: true, status: 'queued', answered: true };
}

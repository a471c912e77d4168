/**
 * Cancels a task wherever it is. A queued task's job is removed so it never starts; a running one is
 * told on the cancel channel (every worker listens; the one holding it aborts the model call and
 * kills the running tool) and also sees the flag at its next commit.
 */
import type { Redis } from 'ioredis';
import type { AgentQueues } from './agent-queues.js';
import type { TaskStore } from './task-store.js';
import type { AgentPool, TaskStatus } from './task-schemas.js';

export async function cancelTask(options: {
  store: TaskStore;
  queues: AgentQueues;
  publisher: Redis;
  taskId: string;
}): Promise<{ found: boolean; status: TaskStatus | undefined }> {
  const { store, taskId } = options;
  const requested = await store.requestCancel(taskId);
  if (requested.status === undefined) return { found: false, status: undefined };
  if (!requested.applied) return { found: true, status: requested.status };
  const cancelled = (expect: TaskStatus, reason: string) =>
    store.commit({
      taskId,
      expect: [expect],
      status: 'cancelled',
      fields: { finishedAt: new Date().toISOString() },
      events: [{ type: 'task.cancelled', data: { reason } }],
    });
  if (requested.status === 'waiting') {
    // No job exists while a task waits for its user.
    const result = await cancelled('waiting', 'cancelled while waiting for an answer');
    if (result.applied) return { found: true, status: result.status };
  }
  if (requested.status === 'queued') {
    const record = await store.getRecord(taskId);
    const queue = options.queues[record?.agent as AgentPool];
    // 0 means a worker holds it now: it sees the flag when it starts.
    const removed = queue ? await queue.remove(record?.jobId || taskId) : 0;
    if (removed === 1) {
      const result = await cancelled('queued', 'cancelled before it started');
      return { found: true, status: result.status };
    }
  }
  await options.publisher.publish(store.keys.cancelChannel, taskId);
  return { found: true, status: requested.status };
}

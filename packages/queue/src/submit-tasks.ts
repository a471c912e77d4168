/**
 * A submission: its tasks stored, then their jobs queued, as a pipeline of chunks: a chunk's jobs go
 * out as soon as its records are stored, while Redis stores the next chunk, so the two overlap
 * instead of following each other (a 10,000-task POST costs little more than BullMQ's addBulk).
 * A job never exists before its task's record: each chunk's jobs are sent after its records' reply.
 */
import type { AgentQueues } from './agent-queues.js';
import type { TaskInput } from './task-schemas.js';
import { CREATE_BATCH as CHUNK } from './task-store.js';
import type { SubmittedTask, Transitions } from './transitions.js';

/** Jobs could not be queued; the tasks that will not run were failed (`enqueue_failed`). */
export class EnqueueError extends Error {}

/** `traceparents`: each task's trace context (with tracing on), in the order of `inputs`. */
export async function submitTasks(options: { transitions: Transitions; queues: AgentQueues; inputs: readonly TaskInput[]; tenant: string; batch?: string | undefined; traceparents?: readonly string[] }): Promise<SubmittedTask[]> {
  const { transitions, queues, inputs, tenant, batch, traceparents } = options;
  // A chunk is one CREATE call.
  const chunks = Array.from({ length: Math.ceil(inputs.length / CHUNK) }, (_, index) => index * CHUNK);
  const stored = chunks.map((start) =>
    transitions.submit(inputs.slice(start, start + CHUNK), { tenant, batch, ...(traceparents ? { traceparents: traceparents.slice(start, start + CHUNK) } : {}) }),
  );
  const queued = stored.map(async (submitted) => {
    const tasks = await submitted;
    // New tasks, and a retried submission's tasks still queued (a job id is its task's: never twice).
    const toQueue = tasks.filter((task) => task.existing === undefined || task.existing === 'queued');
    // Into their tenant's turn for the pool (fair-admission.ts), not straight into its queue.
    await queues.admission.add(toQueue.map((task) => ({ taskId: task.id, tenant, pool: task.agent, priority: task.priority })));
  });
  // Every chunk settles before anything is answered (a chunk that failed to store failed to queue too).
  const outcomes = await Promise.allSettled(queued);
  const tasks = (await Promise.all(stored)).flat();
  const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failure) {
    const message = `Could not enqueue: ${(failure.reason as Error).message}`;
    // A task with an idempotency key stays queued: the client's retry of this request queues it.
    // Any other that no worker took yet is failed, in every chunk: the client submits again.
    const abandoned = tasks.filter((task, index) => inputs[index]!.idempotencyKey === undefined && task.existing === undefined);
    await Promise.all(abandoned.map((task) => transitions.fail({ id: task.id, tenant, listed: true }, { from: ['queued'], error: { code: 'enqueue_failed', message } }))).catch(() => undefined);
    throw new EnqueueError(message);
  }
  return tasks;
}

/**
 * Cancels a task wherever it is. A queued task's job is removed so it never starts; a pending or
 * waiting one has no job and ends at once; a running one is told on the cancel channel (every worker
 * listens; the one holding it aborts the model call and kills the running tool) and also sees the
 * flag at its next commit. Cancelling a planned task cancels every subtask, running or waiting, and
 * cancelling a parent every child its `delegate` calls started, at any depth.
 */
import type { TaskStatus } from '@agentq/contract';
import type { Redis } from 'ioredis';
import { dueMember, ModelOutages, wakeWaiters, type AgentQueues } from '@agentq/scheduling';
import { onChildFinished } from './child-finished.js';
import { publish, type TaskRecord, type TaskStore } from '@agentq/store';
import { Transitions } from './transitions.js';

export interface CancelTaskOptions {
  store: TaskStore;
  queues: AgentQueues;
  publisher: Redis;
  taskId: string;
}

export async function cancelTask(
  options: CancelTaskOptions,
): Promise<{ found: boolean; status: TaskStatus | undefined }> {
  const { store, taskId } = options;
  const transitions = new Transitions(store);
  const found = await store.getRecord(taskId);
  if (!found) return { found: false, status: undefined };
  const requested = await transitions.requestCancel(found);
  if (requested.status === undefined) return { found: false, status: undefined };
  if (!requested.applied) return { found: true, status: requested.status };
  const record = (await store.getRecord(taskId))!;
  const end = async (from: TaskStatus, reason: string) => {
    const result = await transitions.cancel(record, { from: [from], reason, agent: record.agent });
    if (result.applied && record.parentId) await onChildFinished({ store, queues: options.queues, taskId });
    // A task that held its concurrency key (or waited in its queue) makes room for the next.
    if (result.applied) await options.queues.of(taskId).gate.ended(record);
    return result;
  };

  // A planned task's work is its subtasks, a waiting parent's its children: it ends now, and so does each
  // of them (and theirs). A running parent's children have ended, or are cancelled with it.
  if (record.children) {
    const withThem = record.plan !== undefined || requested.status === 'waiting' || requested.status === 'pending';
    const result = withThem
      ? await end(requested.status!, record.plan ? 'cancelled with its subtasks' : 'cancelled with its children')
      : undefined;
    // Subtasks still waiting for their needs first, so that none of them is skipped, rather than
    // cancelled, when a running one it needs stops.
    const children = record.children;
    const statuses = await Promise.all(children.map(async (child) => (await store.getRecord(child))?.status));
    const order = children
      .map((child, index) => ({ child, pending: statuses[index] === 'pending' }))
      .sort((a, b) => Number(b.pending) - Number(a.pending));
    await Promise.all(
      order.filter(({ pending }) => pending).map(({ child }) => cancelTask({ ...options, taskId: child })),
    );
    await Promise.all(
      order.filter(({ pending }) => !pending).map(({ child }) => cancelTask({ ...options, taskId: child })),
    );
    if (result?.applied) return { found: true, status: result.status };
  }
  if (requested.status === 'pending' || requested.status === 'waiting') {
    // No job exists while a subtask waits for its needs or a task for its user.
    const result = await end(
      requested.status,
      requested.status === 'pending' ? 'cancelled before it started' : 'cancelled while waiting for an answer',
    );
    if (result.applied) return { found: true, status: result.status };
  }
  if (requested.status === 'queued') {
    // A pool this configuration no longer declares has no queue here to take its job from.
    const queue = options.queues.pools.includes(record.agent)
      ? options.queues.of(taskId).queue(record.agent)
      : undefined;
    // Still waiting for its tenant's turn (or, after a run that must wait, to be due), or its job not
    // started: it never runs. Otherwise (0) a worker holds it now: it sees the flag when it starts.
    const withdrawn = await options.queues
      .of(taskId)
      .admission.withdraw(record.agent, record.tenant, taskId, dueOf(record));
    const removed = withdrawn ? 1 : queue ? await queue.remove(record.jobId || taskId) : 0;
    if (removed === 1) {
      const result = await end('queued', 'cancelled before it started');
      await leaveOutage(options, record);
      return { found: true, status: result.status };
    }
  }
  await publish(options.publisher, store.keys.cancelChannel, taskId);
  return { found: true, status: (await store.getRecord(taskId))?.status };
}

/**
 * A task whose job waited for its model's endpoint (models.<model>.outage) waits no more: when its job was
 * the one to try the endpoint next, a waiting job is woken to take that over (else they would sleep until
 * the try's lease ran out, minutes).
 */
async function leaveOutage(options: CancelTaskOptions, record: TaskRecord): Promise<void> {
  if (record.outageSince === undefined || !record.model) return;
  const waiter = await new ModelOutages(options.publisher, options.store.keys).left({
    tenant: record.tenant,
    model: record.model,
    member: dueOf(record),
  });
  if (waiter) await wakeWaiters(options.queues, [waiter]);
}

/** How its pool's due set and its model's outage list a task that waits (hold-task.ts). */
function dueOf(record: TaskRecord): string {
  return dueMember({
    pool: record.agent,
    taskId: record.id,
    tenant: record.tenant,
    priority: record.priority,
  });
}

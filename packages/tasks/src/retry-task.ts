/**
 * Runs a failed or cancelled task again, as a new task with the same prompt, agent, priority,
 * metadata (plus `retryOf`), named model, budget, retry policy and given plan, in the same tenant: the old one keeps
 * its history. A task that started children goes on from its last step instead (a fork that keeps them).
 */
import { PLANNER_POOL, type TaskStatus } from '@agentq/contract';
import type { AgentQueues } from '@agentq/scheduling';
import { inputFiles, webhookEventsOf, type TaskStore, type RoomLimits } from '@agentq/store';
import type { TaskInput } from './task-schemas.js';
import { Transitions } from './transitions.js';

/** The statuses a task may be retried from. */
export const RETRYABLE: ReadonlySet<TaskStatus> = new Set(['failed', 'cancelled']);

/**
 * What a retry reads of the task it retries: what it copies, and what says whether it may. Never its
 * result, plan or held calls, which may be megabytes (a bulk retry reads up to 10,000 tasks).
 */
const RETRY_FIELDS = [
  'id',
  'rootId',
  'parentId',
  'tenant',
  'batch',
  'agent',
  'status',
  'prompt',
  'priority',
  'metadata',
  'model',
  'pinnedModel',
  'budgetTokens',
  'budgetMicroUsd',
  'givenPlan',
  'inputs',
  'webhookUrl',
  'webhookOn',
  'concurrencyKey',
  'concurrencyLimit',
  'retryAttempts',
  'retryBackoff',
  'children',
  'steps',
  'pending',
] as const;

/** With `room`, the new task must fit in its tenant's limits (else NoRoomError). */
export async function retryTask(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
  /** The tenant's room, by tenant. */
  room?: (tenant: string) => RoomLimits;
}): Promise<{ found: boolean; status?: TaskStatus; newId?: string }> {
  const record = await options.store.getRecordFields(options.taskId, RETRY_FIELDS);
  if (!record) return { found: false };
  if (!RETRYABLE.has(record.status) || record.parentId) return { found: true, status: record.status };
  // A planned task is planned again; a task of an agent runs on it again.
  const agent = record.agent === PLANNER_POOL ? undefined : record.agent;
  const metadata = { ...(record.metadata ?? {}), retryOf: options.taskId };
  // The same model when it was named, and the same budget.
  const budget =
    record.budgetMicroUsd !== undefined || record.budgetTokens !== undefined
      ? {
          ...(record.budgetMicroUsd !== undefined ? { usd: record.budgetMicroUsd / 1_000_000 } : {}),
          ...(record.budgetTokens !== undefined ? { tokens: record.budgetTokens } : {}),
        }
      : undefined;
  // A plan its client gave runs again as given (its agents were checked when it was submitted).
  const plan = record.givenPlan as TaskInput['plan'];
  const input: TaskInput = {
    prompt: record.prompt,
    ...(agent ? { agent } : {}),
    priority: record.priority,
    metadata,
    ...(record.pinnedModel && record.model ? { model: record.model } : {}),
    ...(budget ? { budget } : {}),
    ...(record.retryAttempts !== undefined || record.retryBackoff !== undefined
      ? {
          retry: {
            ...(record.retryAttempts !== undefined ? { attempts: record.retryAttempts } : {}),
            ...(record.retryBackoff !== undefined ? { backoff: record.retryBackoff } : {}),
          },
        }
      : {}),
    ...(plan ? { plan } : {}),
    // Its files and webhook too: the retry starts with the same files, and its ending is told where the first one's was.
    ...(record.inputs ? { files: await inputFiles(options.store, record.id) } : {}),
    ...(record.webhookUrl ? { webhook: { url: record.webhookUrl, events: webhookEventsOf(record) } } : {}),
    // And its concurrency key: the retry waits its turn with the key's other tasks.
    ...(record.concurrencyKey !== undefined
      ? { concurrencyKey: record.concurrencyKey, concurrencyLimit: record.concurrencyLimit ?? 1 }
      : {}),
  };
  const transitions = new Transitions(options.store);
  // A task whose model started children goes on from its last step (a fork that keeps every one of its
  // steps): its children's answers are kept, and none of them runs again.
  if (agent && record.children?.length) {
    const fork = await transitions.fork(
      record,
      // (A parent stopped while it waited for its children keeps that open step too: its fork's journal
      // answers the call with the children as they stand, fork-journal.ts in the worker.)
      { ...input, agent, fromStep: record.steps + (record.pending?.kind === 'children' ? 2 : 1) },
      options.room && { limits: options.room(record.tenant) },
    );
    await options.queues.admitListed([{ id: fork.id, pool: fork.agent }]);
    return { found: true, status: 'queued', newId: fork.id };
  }
  const [created] = await transitions.submit([input], {
    tenant: record.tenant,
    batch: record.batch,
    ...(options.room ? { room: { limits: options.room(record.tenant) } } : {}),
  });
  await options.queues.admitListed([{ id: created!.id, pool: created!.agent }]);
  if (input.concurrencyKey !== undefined) await options.queues.letThrough(record.tenant, [input.concurrencyKey]);
  return { found: true, status: 'queued', newId: created!.id };
}

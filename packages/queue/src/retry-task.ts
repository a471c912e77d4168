/**
 * Runs a failed or cancelled task again, as a new task with the same prompt, agent, priority and
 * metadata (plus `retryOf`): the old one keeps its history.
 */
import { AGENT_KINDS, type AgentKind, type TaskStatus } from '@agentq/contract';
import { enqueueTasks, type AgentQueues } from './agent-queues.js';
import type { TaskStore } from './task-store.js';
import { DEFAULT_TENANT } from './task-schemas.js';

const RETRYABLE: ReadonlySet<string> = new Set(['failed', 'cancelled']);

export async function retryTask(options: { store: TaskStore; queues: AgentQueues; taskId: string }): Promise<{ found: boolean; status?: TaskStatus; newId?: string }> {
  const record = await options.store.getRecord(options.taskId);
  if (!record) return { found: false };
  if (!RETRYABLE.has(record.status ?? '') || record.parentId) return { found: true, status: record.status as TaskStatus };
  const agent = (AGENT_KINDS as readonly string[]).includes(record.agent ?? '') ? (record.agent as AgentKind) : undefined;
  const metadata = { ...(JSON.parse(record.metadata ?? '{}') as Record<string, unknown>), retryOf: options.taskId };
  const [created] = await options.store.create([{ prompt: record.prompt ?? '', ...(agent ? { agent } : {}), priority: Number(record.priority ?? 5), metadata }], {
    tenant: record.tenant ?? DEFAULT_TENANT,
  });
  await enqueueTasks({ queues: options.queues, tasks: [created!] });
  return { found: true, status: 'queued', newId: created!.id };
}

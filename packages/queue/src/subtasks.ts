/**
 * Running a plan as a DAG across the pools. The state that decides what runs next lives in Redis:
 * each subtask's record (status, needs), a set per subtask of its needs that completed, and a set per
 * root of its subtasks that ended. Every step is idempotent (sets, guarded status changes, job ids =
 * task ids), so the job that ran a finishing subtask can be re-run after a crash and loses nothing.
 * A subtask runs as soon as all of its needs completed, not in waves.
 */
import { type AgentPool, type TaskError, type TaskStatus, TERMINAL_STATUSES } from '@agentq/contract';
import type { AgentQueues } from './agent-queues.js';
import { bullPriority } from './agent-queues.js';
import { dependentsOf, type PlannedSubtask } from './plan.js';
import type { TaskStore } from './task-store.js';
import { DEFAULT_TENANT } from './task-schemas.js';

/** A plan as stored on its root: every subtask of every version, with its task id. */
export interface StoredSubtask extends PlannedSubtask {
  taskId: string;
  version: number;
}

export const FINISH_JOB = 'finish';

interface DagOptions {
  store: TaskStore;
  queues: AgentQueues;
}

/** Stores the subtasks of a (re)plan, links them to their root, and queues those that need nothing. */
export async function startPlan(options: DagOptions & { rootId: string; plan: readonly PlannedSubtask[]; version: number }): Promise<StoredSubtask[]> {
  const { store, rootId, version } = options;
  const root = await store.getRecord(rootId);
  if (!root) throw new Error(`No root task ${rootId}`);
  const earlier = storedPlan(root);
  const taskIdOf = new Map(options.plan.map((subtask, index) => [subtask.id, `${rootId}.v${version}.s${index + 1}`]));
  const stored: StoredSubtask[] = options.plan.map((subtask) => ({ ...subtask, taskId: taskIdOf.get(subtask.id)!, version }));
  const now = new Date().toISOString();
  const pipeline = store.redis.pipeline();
  for (const subtask of stored) {
    pipeline.hset(store.keys.task(subtask.taskId), {
      id: subtask.taskId,
      rootId,
      parentId: rootId,
      tenant: root.tenant ?? DEFAULT_TENANT,
      planId: subtask.id,
      agent: subtask.agent,
      prompt: subtask.task,
      priority: root.priority ?? '5',
      metadata: '{}',
      needs: JSON.stringify(subtask.need.map((need) => taskIdOf.get(need)!)),
      status: 'pending',
      steps: '0',
      promptTokens: '0',
      completionTokens: '0',
      createdAt: now,
      seq: '0',
    });
  }
  await pipeline.exec();
  const all = [...earlier, ...stored];
  await store.commit({
    taskId: rootId,
    fields: { plan: JSON.stringify(all), children: JSON.stringify(all.map((subtask) => subtask.taskId)), planVersion: String(version) },
    events: [{ type: 'plan.created', data: { version, plan: stored.map(({ id, agent, task, need, taskId }) => ({ id, agent, task, need, taskId })) } }],
  });
  for (const subtask of stored) if (subtask.need.length === 0) await releaseSubtask({ ...options, taskId: subtask.taskId });
  return stored;
}

/** Queues a pending subtask (its needs are done); queues again a queued one whose job may be missing. */
export async function releaseSubtask(options: DagOptions & { taskId: string }): Promise<void> {
  const { store, taskId } = options;
  const released = await store.commit({ taskId, expect: ['pending'], status: 'queued', events: [{ type: 'task.queued', data: {} }] });
  const record = await store.getRecord(taskId);
  if (!record || record.status !== 'queued') return;
  await options.queues[record.agent as AgentPool].add('agent', { taskId }, { jobId: taskId, priority: bullPriority(Number(record.priority ?? 5)) });
  if (released.applied) {
    await store.commit({
      taskId: record.rootId!,
      events: [{ type: 'subtask.queued', agent: record.agent ?? '', data: { subtaskId: taskId, planId: record.planId ?? '', agent: record.agent ?? '' } }],
    });
  }
}

/**
 * What follows a subtask's end: its dependents run when all their needs completed, or are skipped
 * (with the reason) when it did not; its end shows in its root's stream; and when every subtask of
 * the root ended, the planner's finishing job is queued.
 */
export async function onSubtaskFinished(options: DagOptions & { taskId: string }): Promise<void> {
  const { store, taskId } = options;
  const record = await store.getRecord(taskId);
  if (!record?.parentId) return;
  const root = await store.getRecord(record.parentId);
  if (!root) return;
  const plan = storedPlan(root);
  const self = plan.find((subtask) => subtask.taskId === taskId);
  if (!self) return;
  const status = record.status as TaskStatus;
  // Only an end has consequences (a run that lost its task to another worker is not one).
  if (!TERMINAL_STATUSES.has(status)) return;
  const redis = store.redis;
  await redis.sadd(store.keys.finishedSubtasks(root.id!), taskId);
  await mirrorEnd(store, root.id!, record);

  const samePlan = plan.filter((subtask) => subtask.version === self.version);
  if (status === 'completed') {
    for (const dependent of samePlan.filter((subtask) => subtask.need.includes(self.id))) {
      await redis.sadd(store.keys.doneNeeds(dependent.taskId), taskId);
      if ((await redis.scard(store.keys.doneNeeds(dependent.taskId))) >= dependent.need.length) {
        await releaseSubtask({ ...options, taskId: dependent.taskId });
      }
    }
  } else {
    // Dependents in the order they are reached, each blaming the need it cannot get.
    const unavailable = new Set([self.id]);
    for (const id of dependentsOf(samePlan, self.id)) {
      const dependent = samePlan.find((subtask) => subtask.id === id)!;
      const blocker = dependent.need.find((need) => unavailable.has(need)) ?? self.id;
      unavailable.add(id);
      const what = blocker === self.id ? (status === 'skipped' ? 'was skipped' : status) : 'was skipped';
      const reason = `skipped: it needs subtask ${blocker}, which ${what}`;
      const skipped = await store.commit({
        taskId: dependent.taskId,
        expect: ['pending'],
        status: 'skipped',
        fields: { error: JSON.stringify({ code: 'needs_failed', message: reason }), finishedAt: new Date().toISOString() },
        events: [{ type: 'task.failed', agent: dependent.agent, data: { skipped: true, reason } }],
      });
      if (skipped.applied) {
        await redis.sadd(store.keys.finishedSubtasks(root.id!), dependent.taskId);
        const skippedRecord = await store.getRecord(dependent.taskId);
        if (skippedRecord) await mirrorEnd(store, root.id!, skippedRecord);
      }
    }
  }
  await finishRootIfDone({ ...options, rootId: root.id! });
}

/** Queues the planner's finishing job once every subtask of the root has ended. */
export async function finishRootIfDone(options: DagOptions & { rootId: string }): Promise<void> {
  const { store, rootId } = options;
  const root = await store.getRecord(rootId);
  if (!root?.children) return;
  const children = JSON.parse(root.children) as string[];
  if ((await store.redis.scard(store.keys.finishedSubtasks(rootId))) < children.length) return;
  await options.queues.planner.add(FINISH_JOB, { taskId: rootId }, { jobId: `${rootId}-finish-v${root.planVersion ?? 1}`, priority: bullPriority(Number(root.priority ?? 5)) });
}

/** A subtask's end, as an event of its root's stream (with the subtask's own task id). */
async function mirrorEnd(store: TaskStore, rootId: string, record: Record<string, string>): Promise<void> {
  const status = record.status as TaskStatus;
  const end = { subtaskId: record.id!, planId: record.planId ?? '', status, ...(record.error ? { error: JSON.parse(record.error) as TaskError } : {}) };
  const by = { taskId: record.id!, agent: record.agent ?? '' };
  await store.commit({
    taskId: rootId,
    events: [
      status === 'completed'
        ? { ...by, type: 'task.completed', data: { ...end, result: record.result ?? '' } }
        : status === 'cancelled'
          ? { ...by, type: 'task.cancelled', data: end }
          : { ...by, type: 'task.failed', data: { ...end, ...(record.result ? { result: record.result } : {}) } },
    ],
  });
}

export function storedPlan(root: Record<string, string>): StoredSubtask[] {
  return root.plan ? (JSON.parse(root.plan) as StoredSubtask[]) : [];
}

/**
 * Running a plan as a DAG across the pools. The state that decides what runs next lives in Redis:
 * each subtask's record (status, needs), a set per subtask of its needs that completed, and a set per
 * root of its subtasks that ended. Every step is idempotent (sets, guarded status changes, job ids =
 * task ids), so the job that ran a finishing subtask can be re-run after a crash and loses nothing.
 * A subtask runs as soon as all of its needs completed, not in waves.
 */
import { type TaskError, TERMINAL_STATUSES } from '@agentq/contract';
import { enqueue, type AgentQueues } from '@agentq/scheduling';
import { dependentsOf, type PlannedSubtask } from '@agentq/core';
import { TaskMissingError, type StoredSubtask, type TaskRecord, type TaskStore } from '@agentq/store';
import { joinWrites, Transitions, type HeldWrite } from './transitions.js';

interface DagOptions {
  store: TaskStore;
  queues: AgentQueues;
}

/** Stores the subtasks of a (re)plan, links them to their root, and queues those that need nothing. */
/** `traceparent`: the trace context the subtasks' runs continue (the planner's run, with tracing on). */
export async function startPlan(
  options: DagOptions & {
    rootId: string;
    plan: readonly PlannedSubtask[];
    version: number;
    traceparent?: string | undefined;
    /** The client gave it on submit. */
    given?: boolean;
    /** What the run that planned held back (its `task.started`): written first, with the plan. */
    takeHeld?: (() => HeldWrite | undefined) | undefined;
  },
): Promise<StoredSubtask[]> {
  const { store, rootId, version } = options;
  const root = await store.getRecord(rootId);
  if (!root) throw new TaskMissingError(rootId, `The plan's task ${rootId} is gone (deleted, or its retention ended)`);
  const earlier = root.plan ?? [];
  const taskIdOf = new Map(options.plan.map((subtask, index) => [subtask.id, `${rootId}.v${version}.s${index + 1}`]));
  const stored: StoredSubtask[] = options.plan.map((subtask) => ({
    ...subtask,
    taskId: taskIdOf.get(subtask.id)!,
    version,
  }));
  await new Transitions(store).addSubtasks(root, stored, options.traceparent);
  const all = [...earlier, ...stored];
  const created = {
    type: 'plan.created' as const,
    data: {
      version,
      plan: stored.map(({ id, agent, task, need, taskId }) => ({ id, agent, task, need, taskId })),
      ...(options.given ? { given: true as const } : {}),
    },
  };
  await store.commit({
    taskId: rootId,
    tenant: root.tenant,
    fields: {
      plan: JSON.stringify(all),
      children: JSON.stringify(all.map((subtask) => subtask.taskId)),
      planVersion: String(version),
    },
    ...joinWrites(options.takeHeld?.(), { messages: [], events: [created] }),
  });
  await releaseSubtasks({
    ...options,
    taskIds: stored.filter((subtask) => subtask.need.length === 0).map((subtask) => subtask.taskId),
  });
  return stored;
}

/**
 * Queues pending subtasks of one root (their needs are done), or the children of one `delegate` call,, or queues again queued ones whose job
 * may be missing: all of them at once (their reads and writes go out together, one admission call and
 * one commit on the root for all), so that subtasks released together start together.
 */
export async function releaseSubtasks(options: DagOptions & { taskIds: readonly string[] }): Promise<void> {
  const { store } = options;
  const transitions = new Transitions(store);
  const records = (await Promise.all(options.taskIds.map((taskId) => store.getRecord(taskId)))).filter(
    (record) => record !== undefined,
  );
  const released = await Promise.all(
    records.map(async (record) => ({ record, result: await transitions.release(record) })),
  );
  const queued = released.filter(({ result }) => result.status === 'queued');
  if (queued.length === 0) return;
  // A plan's subtasks are in its root's cell.
  await options.queues.of(queued[0]!.record.id).admission.add(
    queued.map(({ record }) => ({
      taskId: record.id,
      tenant: record.tenant,
      pool: record.agent,
      priority: record.priority,
    })),
  );
  // The root's stream says which of its subtasks were queued (not again for a job queued again).
  const announced = queued.filter(({ result }) => result.applied);
  if (announced.length === 0) return;
  // (a delegated child's, its parent's)
  const first = announced[0]!.record;
  await store.commit({
    taskId: first.parentId ?? first.rootId,
    tenant: first.tenant,
    events: announced.map(({ record }) => ({
      type: 'subtask.queued',
      agent: record.agent,
      data: { subtaskId: record.id, planId: record.planId ?? '', agent: record.agent },
    })),
  });
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
  const plan = root.plan ?? [];
  const self = plan.find((subtask) => subtask.taskId === taskId);
  if (!self) return;
  const status = record.status;
  // Only an end has consequences (a run that lost its task to another worker is not one).
  if (!TERMINAL_STATUSES.has(status)) return;
  const redis = store.redis;
  await Promise.all([redis.sadd(store.keys.finishedSubtasks(root.id), taskId), mirrorEnd(store, root.id, record)]);

  const samePlan = plan.filter((subtask) => subtask.version === self.version);
  if (status === 'completed') {
    // Every dependent's needs counted at once; those with all of them done are released together.
    const dependents = samePlan.filter((subtask) => subtask.need.includes(self.id));
    const counted = await Promise.all(
      dependents.map(async (dependent) => {
        const key = store.keys.doneNeeds(dependent.taskId);
        const results = (await redis.pipeline().sadd(key, taskId).scard(key).exec()) ?? [];
        for (const [error] of results) if (error) throw error;
        return Number(results[1]?.[1] ?? 0) >= dependent.need.length ? [dependent.taskId] : [];
      }),
    );
    await releaseSubtasks({ ...options, taskIds: counted.flat() });
  } else {
    // Dependents in the order they are reached, each blaming the need it cannot get.
    const transitions = new Transitions(store);
    const unavailable = new Set([self.id]);
    for (const id of dependentsOf(samePlan, self.id)) {
      const dependent = samePlan.find((subtask) => subtask.id === id)!;
      const blocker = dependent.need.find((need) => unavailable.has(need)) ?? self.id;
      unavailable.add(id);
      const what = blocker === self.id ? (status === 'skipped' ? 'was skipped' : status) : 'was skipped';
      const dependentRecord = await store.getRecord(dependent.taskId);
      if (!dependentRecord) continue;
      const skipped = await transitions.skip(dependentRecord, {
        agent: dependent.agent,
        reason: `skipped: it needs subtask ${blocker}, which ${what}`,
      });
      if (skipped.applied) {
        await redis.sadd(store.keys.finishedSubtasks(root.id), dependent.taskId);
        const skippedRecord = await store.getRecord(dependent.taskId);
        if (skippedRecord) await mirrorEnd(store, root.id, skippedRecord);
      }
    }
  }
  await finishRootIfDone({ ...options, rootId: root.id });
}

/** Queues the planner's finishing job once every subtask of the root has ended. */
async function finishRootIfDone(options: DagOptions & { rootId: string }): Promise<void> {
  const { store, rootId } = options;
  const root = await store.getRecord(rootId);
  if (!root?.children) return;
  if ((await store.redis.scard(store.keys.finishedSubtasks(rootId))) < root.children.length) return;
  await enqueue(options.queues.of(rootId).queue, [
    {
      kind: 'finish',
      pool: 'planner',
      payload: { taskId: rootId, tenant: root.tenant },
      jobId: `${rootId}-finish-v${root.planVersion}`,
    },
  ]);
}

/** A subtask's end, as an event of its root's stream (with the subtask's own task id). */
async function mirrorEnd(store: TaskStore, rootId: string, record: TaskRecord): Promise<void> {
  const { status } = record;
  const end = {
    subtaskId: record.id,
    planId: record.planId ?? '',
    status,
    ...(record.error ? { error: record.error satisfies TaskError } : {}),
  };
  const by = { taskId: record.id, agent: record.agent };
  await store.commit({
    taskId: rootId,
    tenant: record.tenant,
    events: [
      status === 'completed'
        ? { ...by, type: 'task.completed', data: { ...end, result: record.result ?? '' } }
        : status === 'cancelled'
          ? { ...by, type: 'task.cancelled', data: end }
          : { ...by, type: 'task.failed', data: { ...end, ...(record.result ? { result: record.result } : {}) } },
    ],
  });
}

/**
 * The planner pool's `agent` job: ask the model for a plan of a submitted task (core's planning
 * stage), or take the plan its client gave, and start it as a DAG of subtasks across the pools, or
 * record why there is none.
 */
import type { Job } from 'bullmq';
import { TERMINAL_STATUSES } from '@agentq/contract';
import { agentNames } from '@agentq/config';
import { planTask, type PlanOutcome } from '@agentq/core';
import { releaseSubtasks, startPlan } from '@agentq/tasks';
import { type JobPayload } from '@agentq/scheduling';
import { type TaskRecord } from '@agentq/store';
import { holdTask } from './hold-task.js';
import type { JobContext } from './job-context.js';
import { plannerPrompt } from './planner-prompt.js';
import { spendingStopMessage } from './spending-stop.js';

export interface PlannerContext extends JobContext {
  /** Offer `submit_plan` as a native tool (the planner pool's protocol is native). */
  offerTool: boolean;
}

export async function runPlanJob(
  job: Job,
  payload: JobPayload<'agent'>,
  context: PlannerContext,
  token?: string,
): Promise<string> {
  const { store, transitions, config } = context;
  const record = await store.getRecord(payload.taskId);
  if (!record || TERMINAL_STATUSES.has(record.status)) return 'skipped';
  // Planned already (this job is re-run after a crash): make sure what can run was queued.
  if (record.plan) {
    await releaseSubtasks({
      store,
      queues: context.queues,
      taskIds: record.plan.filter((subtask) => subtask.need.length === 0).map((subtask) => subtask.taskId),
    });
    return 'planned';
  }
  const end = await holdTask({
    ...plannerHold(job, token, context, record),
    // A run that must wait goes back through admission (hold-task.ts).
    readmit: true,
    run: async (held): Promise<PlanOutcome | { status: 'failed'; reason: 'budget'; message: string }> => {
      const stop = held.spending();
      if (stop) return { status: 'failed', reason: 'budget', message: spendingStopMessage(stop, record) };
      // A plan its client gave (checked on submit) runs as given: no model call.
      if (record.givenPlan) return { status: 'planned', plan: record.givenPlan };
      return planTask({
        model: held.model,
        journal: held.journal,
        systemPrompt: plannerPrompt(config),
        prompt: record.prompt,
        attempts: config.AGENTQ_PLAN_ATTEMPTS,
        maxSubtasks: config.AGENTQ_MAX_SUBTASKS,
        agents: agentNames(config),
        offerTool: context.offerTool,
        signal: held.signal,
      });
    },
    settle: async (ran, { by }) => {
      const outcome =
        ran.ended === 'ran' ? ran.value : ({ status: 'failed', reason: 'error', message: ran.message } as const);
      switch (outcome.status) {
        case 'planned':
          await startPlan({
            store,
            queues: context.queues,
            rootId: record.id,
            traceparent: context.tracing.activeTraceparent(),
            plan: outcome.plan,
            version: 1,
            given: record.givenPlan !== undefined,
            takeHeld: by.takeHeld,
          });
          return 'planned';
        case 'cancelled':
          await transitions.cancel(record, {
            ...by,
            from: ['running'],
            reason: 'cancelled while it was being planned',
          });
          return 'cancelled';
        case 'failed':
          await transitions.fail(record, { ...by, error: { code: outcome.reason, message: outcome.message } });
          return 'failed';
      }
    },
  });
  return end.held ? end.value : end.lost ? 'lost' : end.cancelled ? 'cancelled' : 'skipped';
}

/**
 * How the planner's jobs (a plan, a planned task's end) hold their root task: as `planner`, saying
 * `task.started` only when the task comes from the queue (not when its subtasks' end wakes it).
 */
export function plannerHold(job: Job, token: string | undefined, context: PlannerContext, record: TaskRecord) {
  return {
    job,
    token,
    context,
    task: { taskId: record.id, tenant: record.tenant },
    agent: 'planner',
    resumed: (claimed: TaskRecord) => Boolean(claimed.startedAt),
    announce: (claimed: TaskRecord) => claimed.status === 'queued',
  };
}

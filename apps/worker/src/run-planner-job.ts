/**
 * The planner pool's jobs. `agent`: ask the model for a plan of the root task and start it as a DAG
 * of subtasks across the pools. `finish`: once every subtask ended, write the final answer (one model
 * call that sees the goal and every result), re-plan around failures (bounded), or fail with the
 * partial results.
 */
import { TERMINAL_STATUSES, type TaskError } from '@agentq/contract';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Message } from '@agentq/protocol';
import { agentJobSchema, FINISH_JOB, releaseSubtask, startPlan, storedPlan, type AgentJob } from '@agentq/queue';
import { askForPlan } from './ask-for-plan.js';
import type { JobContext } from './job-context.js';
import { finishPlannedTask } from './finish-planned-task.js';
import { failOnModelError, holdRoot, requeueIfInterrupted } from './planner-run.js';
import { plannerPrompt } from './planner-prompt.js';

export interface PlannerJobContext extends JobContext {
  /** Offer `submit_plan` as a native tool (the planner pool's protocol is native). */
  offerTool: boolean;
}

export async function runPlannerJob(job: Job<AgentJob>, context: PlannerJobContext, token?: string): Promise<string> {
  const parsed = agentJobSchema.safeParse(job.data);
  if (!parsed.success) throw new UnrecoverableError(`Invalid job payload: ${parsed.error.message}`);
  const { taskId } = parsed.data;
  const { store } = context;
  const record = await store.getRecord(taskId);
  if (!record || TERMINAL_STATUSES.has(record.status as never)) return 'skipped';
  if (job.name === FINISH_JOB) return finishPlannedTask({ ...context, record, attempt: job.attemptsMade + 1, job, token });

  // Planned already (this job is re-run after a crash): make sure what can run was queued.
  if (record.plan) {
    for (const subtask of storedPlan(record)) if (subtask.need.length === 0) await releaseSubtask({ store, queues: context.queues, taskId: subtask.taskId });
    return 'planned';
  }
  const run = await holdRoot({ store, cancels: context.cancels, taskId, workerId: context.workerId, record, attempt: job.attemptsMade + 1 });
  if (!run) return 'skipped';
  try {
    const entries = await run.journal.load();
    if (entries.length === 0) {
      const initial: Message[] = [
        { role: 'system', content: plannerPrompt(context.config.AGENTQ_SEARCH_URL ? { searchUrl: context.config.AGENTQ_SEARCH_URL } : {}) },
        { role: 'user', content: record.prompt ?? '' },
      ];
      await run.journal.commit({ messages: initial });
      entries.push(...initial);
    }
    const tried = entries.filter((entry) => entry.role === 'assistant').length;
    const answer = await askForPlan({
      model: context.model,
      journal: run.journal,
      entries,
      attempts: Math.max(0, context.config.AGENTQ_PLAN_ATTEMPTS - tried),
      maxSubtasks: context.config.AGENTQ_MAX_SUBTASKS,
      offerTool: context.offerTool,
      signal: run.signal,
    });
    if (run.signal.aborted) {
      await requeueIfInterrupted({ cancels: context.cancels, job, token });
      return 'cancelled';
    }
    if (!answer.ok) {
      const error: TaskError = { code: 'invalid_plan', message: `The planner gave no valid plan in ${context.config.AGENTQ_PLAN_ATTEMPTS} attempts: ${answer.errors.join('; ')}` };
      await store.commit({
        taskId,
        runToken: run.runToken,
        expect: ['running'],
        status: 'failed',
        fields: { error: JSON.stringify(error), finishedAt: new Date().toISOString() },
        events: [{ type: 'task.failed', agent: 'planner', worker: context.workerId, data: { error } }],
      });
      return 'failed';
    }
    await startPlan({ store, queues: context.queues, rootId: taskId, plan: answer.plan, version: 1 });
    return 'planned';
  } catch (error) {
    if (!(error instanceof DelayedError)) await requeueIfInterrupted({ cancels: context.cancels, job, token });
    return failOnModelError({ store, taskId, run, workerId: context.workerId, error, rateLimit: context.rateLimit });
  } finally {
    run.release();
  }
}

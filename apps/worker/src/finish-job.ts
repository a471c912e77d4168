/**
 * The planner pool's `finish` job, once every subtask of a planned task ended: all completed -> one
 * model call writes the final answer from the goal and the results; some did not -> re-plan around
 * them (bounded, once by default; never a plan its client gave), or fail the task with the partial
 * results. No model call happens between subtasks.
 */
import type { Job } from 'bullmq';
import { TERMINAL_STATUSES, type TaskError } from '@agentq/contract';
import { agentNames } from '@agentq/config';
import {
  QUOTED_TEXT_RULE,
  quoted,
  replanTask,
  writeFinalAnswer,
  type FinalAnswerOutcome,
  type PlanOutcome,
} from '@agentq/core';
import { budgetSpent, type TaskRecord } from '@agentq/store';
import { startPlan, type ByRun } from '@agentq/tasks';
import { type JobPayload } from '@agentq/scheduling';
import { capOutput } from '@agentq/tools';
import { holdTask } from './hold-task.js';
import { plannerHold, type PlannerContext } from './plan-job.js';
import { spendingStopMessage } from './spending-stop.js';
import { readPrompt } from './system-prompts.js';

/** Characters of each subtask's result the final answer (and a re-plan) sees. */
const RESULT_LIMIT = 6_000;

type Finish =
  | { kind: 'answer'; outcome: FinalAnswerOutcome }
  | { kind: 'replan'; outcome: PlanOutcome }
  | { kind: 'give_up' }
  | { kind: 'stop'; message: string };

export async function runFinishJob(
  job: Job,
  payload: JobPayload<'finish'>,
  context: PlannerContext,
  token?: string,
): Promise<string> {
  const { store, transitions, config } = context;
  const record = await store.getRecord(payload.taskId);
  if (!record || TERMINAL_STATUSES.has(record.status)) return 'skipped';
  const plan = record.plan ?? [];
  const children = await Promise.all(
    plan.map(async (subtask) => ({ subtask, record: await store.getRecord(subtask.taskId) })),
  );
  const current = children.filter((child) => child.subtask.version === record.planVersion);
  const failed = current.filter((child) => child.record?.status !== 'completed');
  const steps = children.map(({ subtask, record: child }) => ({
    head: `### Step ${subtask.id} (${subtask.agent}, ${child?.status ?? 'missing'}): ${subtask.task}`,
    // Each result is capped (head and tail kept), so many long results still fit one request.
    outcome:
      child?.status === 'completed'
        ? capOutput(child.result ?? '', RESULT_LIMIT)
        : `${child?.status ?? 'missing'}: ${child?.error?.message ?? 'no result'}`,
  }));
  // What the user reads of the steps, and what a model reads: each result quoted, as data.
  const report = steps.map(({ head, outcome }) => `${head}\n${outcome}`);
  const quotedReport = steps.map(({ head, outcome }) => `${head}\n${quoted(outcome)}`);
  const problems = failed.map(
    ({ subtask, record: child }) =>
      `step ${subtask.id} ${child?.status ?? 'missing'}${child?.error ? ` (${child.error.message})` : ''}`,
  );
  // A plan its client gave is not rewritten by the model: it fails with what its steps did.
  const mayReplan = !record.givenPlan && record.replans < config.AGENTQ_REPLANS;

  const end = await holdTask<Finish, string>({
    ...plannerHold(job, token, context, record),
    run: async (held) => {
      // Its budget (or its tenant's limit) is spent: no final answer and no re-plan, only what was done.
      const stop = held.spending() ?? (budgetSpent(record) ? 'budget' : undefined);
      if (stop) return { kind: 'stop', message: spendingStopMessage(stop, record) };
      if (failed.length === 0) {
        const results = `The user's task: ${record.prompt}\n\nThe results of its steps (${QUOTED_TEXT_RULE}):\n\n${quotedReport.join('\n\n')}`;
        return {
          kind: 'answer',
          outcome: await writeFinalAnswer({
            model: held.model,
            journal: held.journal,
            systemPrompt: readPrompt('planner-final'),
            results,
            signal: held.signal,
          }),
        };
      }
      if (!mayReplan) return { kind: 'give_up' };
      await store.commit({
        taskId: record.id,
        tenant: record.tenant,
        runToken: held.by.runToken,
        fields: { replans: String(record.replans + 1) },
      });
      const outcome = await replanTask({
        model: held.model,
        journal: held.journal,
        // Which steps, without their errors: an error is text another author wrote, read quoted below.
        feedback: `Some steps did not complete: ${failed.map(({ subtask, record: child }) => `step ${subtask.id} ${child?.status ?? 'missing'}`).join('; ')}.\n\nWhat the steps produced so far (${QUOTED_TEXT_RULE}):\n\n${quotedReport.join('\n\n')}\n\nMake a new plan for the work that remains, around what failed. The new subtasks see the results above only if you repeat what they need in their task.`,
        attempts: config.AGENTQ_PLAN_ATTEMPTS,
        maxSubtasks: config.AGENTQ_MAX_SUBTASKS,
        agents: agentNames(config),
        offerTool: context.offerTool,
        signal: held.signal,
      });
      return { kind: 'replan', outcome };
    },
    settle: async (ran, { by }) => {
      const finish: Finish =
        ran.ended === 'ran'
          ? ran.value
          : { kind: 'answer', outcome: { status: 'failed', reason: 'error', message: ran.message } };
      if (finish.kind === 'stop') {
        const error: TaskError = {
          code: 'budget',
          message: `${finish.message} ${current.length - failed.length} of ${current.length} steps completed.`,
        };
        return failWithPartialResults({ context, record, by, error, report });
      }
      const outcome = finish.kind === 'give_up' ? undefined : finish.outcome;
      if (outcome?.status === 'cancelled') {
        await transitions.cancel(record, { ...by, from: ['running'], reason: 'cancelled while its end was written' });
        await context.queues.of(record.id).gate.ended(record);
        return 'cancelled';
      }
      if (outcome?.status === 'failed' && outcome.reason === 'error') {
        await transitions.fail(record, { ...by, error: { code: 'error', message: outcome.message } });
        await context.queues.of(record.id).gate.ended(record);
        return 'failed';
      }
      if (finish.kind === 'answer' && outcome?.status === 'completed') {
        await transitions.complete(record, { ...by, result: outcome.answer, subtasks: children.length });
        await context.queues.of(record.id).gate.ended(record);
        return 'completed';
      }
      if (outcome?.status === 'planned') {
        await startPlan({
          store,
          queues: context.queues,
          rootId: record.id,
          traceparent: context.tracing.activeTraceparent(),
          plan: outcome.plan,
          version: record.planVersion + 1,
          takeHeld: by.takeHeld,
        });
        return 'replanned';
      }
      if (outcome?.status === 'failed' && outcome.reason === 'invalid_plan')
        problems.push(`re-planning failed: ${outcome.errors.join('; ')}`);
      const error: TaskError = {
        code: 'subtasks_failed',
        message: `${failed.length} of ${current.length} steps did not complete: ${problems.join('; ')}`,
      };
      return failWithPartialResults({ context, record, by, error, report });
    },
  });
  return end.held ? end.value : end.lost ? 'lost' : end.cancelled ? 'cancelled' : 'skipped';
}

/** The planned task fails with `error`, its result what the steps produced. */
async function failWithPartialResults(options: {
  context: PlannerContext;
  record: TaskRecord;
  by: ByRun;
  error: TaskError;
  report: string[];
}): Promise<string> {
  await options.context.transitions.fail(options.record, {
    ...options.by,
    error: options.error,
    result: `Partial results:\n\n${options.report.join('\n\n')}`,
  });
  return 'failed';
}

/**
 * The end of a planned task, once every subtask ended: all completed -> one model call writes the
 * final answer from the goal and the results; some failed -> re-plan around them (bounded, once by
 * default) or fail the task with the partial results. No model call happens between subtasks.
 */
import type { TaskError } from '@agentq/contract';
import type { Job } from 'bullmq';
import { nativeProtocol, takeModelTurn } from '@agentq/core';
import type { Message } from '@agentq/protocol';
import { startPlan, storedPlan } from '@agentq/queue';
import { capOutput } from '@agentq/tools';
import { askForPlan } from './ask-for-plan.js';
import { failOnModelError, holdRoot, requeueIfInterrupted } from './planner-run.js';
import type { PlannerJobContext } from './run-planner-job.js';
import { readPrompt } from './system-prompts.js';

/** Characters of each subtask's result the final answer (and a re-plan) sees. */
const RESULT_LIMIT = 6_000;

export async function finishPlannedTask(options: PlannerJobContext & { record: Record<string, string>; attempt: number; job: Job; token: string | undefined }): Promise<string> {
  const { store, record } = options;
  const taskId = record.id!;
  const plan = storedPlan(record);
  const version = Number(record.planVersion ?? 1);
  const children = await Promise.all(plan.map(async (subtask) => ({ subtask, record: (await store.getRecord(subtask.taskId)) ?? {} })));
  const current = children.filter((child) => child.subtask.version === version);
  const failed = current.filter((child) => child.record.status !== 'completed');
  const report = children.map(({ subtask, record: child }) => {
    // Each result is capped (head and tail kept), so many long results still fit one request.
    const outcome = child.status === 'completed' ? capOutput(child.result ?? '', RESULT_LIMIT) : `${child.status}: ${child.error ? (JSON.parse(child.error) as { message: string }).message : 'no result'}`;
    return `### Step ${subtask.id} (${subtask.agent}, ${child.status}): ${subtask.task}\n${outcome}`;
  });

  const run = await holdRoot({ store, cancels: options.cancels, taskId, workerId: options.workerId, record, attempt: options.attempt });
  if (!run) return 'skipped';
  const by = { agent: 'planner', worker: options.workerId };
  try {
    const entries = await run.journal.load();
    if (failed.length === 0) {
      const results: Message = { role: 'user', content: `The user's task: ${record.prompt}\n\nThe results of its steps:\n\n${report.join('\n\n')}`, _feedback: true };
      await run.journal.commit({ messages: [results] });
      const step = entries.filter((entry) => entry.role === 'assistant').length + 1;
      const turn = await takeModelTurn({
        model: options.model,
        context: [{ role: 'system', content: readPrompt('planner-final') }, results],
        protocol: nativeProtocol,
        tools: [],
        toolSpecs: [],
        journal: run.journal,
        step,
        signal: run.signal,
      });
      const answer = turn.plan.kind === 'final' ? turn.plan.answer : (turn.committed[0]?.content ?? '');
      await store.commit({
        taskId,
        runToken: run.runToken,
        expect: ['running'],
        status: 'completed',
        fields: { result: answer, finishedAt: new Date().toISOString() },
        events: [{ type: 'task.completed', ...by, data: { result: answer, subtasks: children.length } }],
      });
      return 'completed';
    }

    const problems = failed.map(({ subtask, record: child }) => `step ${subtask.id} ${child.status}${child.error ? ` (${(JSON.parse(child.error) as { message: string }).message})` : ''}`);
    const replans = Number(record.replans ?? 0);
    if (replans < options.config.AGENTQ_REPLANS) {
      const ask: Message = {
        role: 'user',
        content: `Some steps did not complete: ${problems.join('; ')}.\n\nWhat the steps produced so far:\n\n${report.join('\n\n')}\n\nMake a new plan for the work that remains, around what failed. The new subtasks see the results above only if you repeat what they need in their task.`,
        _feedback: true,
      };
      await run.journal.commit({ messages: [ask] });
      entries.push(ask);
      await store.commit({ taskId, runToken: run.runToken, fields: { replans: String(replans + 1) } });
      const answer = await askForPlan({
        model: options.model,
        journal: run.journal,
        entries,
        attempts: options.config.AGENTQ_PLAN_ATTEMPTS,
        maxSubtasks: options.config.AGENTQ_MAX_SUBTASKS,
        offerTool: options.offerTool,
        signal: run.signal,
      });
      if (answer.ok) {
        await startPlan({ store, queues: options.queues, rootId: taskId, plan: answer.plan, version: version + 1 });
        return 'replanned';
      }
      problems.push(`re-planning failed: ${answer.errors.join('; ')}`);
    }
    const error: TaskError = { code: 'subtasks_failed', message: `${failed.length} of ${current.length} steps did not complete: ${problems.join('; ')}` };
    await store.commit({
      taskId,
      runToken: run.runToken,
      expect: ['running'],
      status: 'failed',
      fields: { error: JSON.stringify(error), result: `Partial results:\n\n${report.join('\n\n')}`, finishedAt: new Date().toISOString() },
      events: [{ type: 'task.failed', ...by, data: { error } }],
    });
    return 'failed';
  } catch (error) {
    await requeueIfInterrupted({ cancels: options.cancels, job: options.job, token: options.token });
    return failOnModelError({ store, taskId, run, workerId: options.workerId, error, rateLimit: options.rateLimit });
  } finally {
    run.release();
  }
}

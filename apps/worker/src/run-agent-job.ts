/**
 * An agent job: check the task is still wanted, hold it, run the agent loop from the task's journal,
 * and record how it ended. How a run ends for the job (hand-back, pool pause, retry) is hold-task.ts's.
 */
import path from 'node:path';
import { UnrecoverableError, type Job } from 'bullmq';
import { TERMINAL_STATUSES } from '@agentq/contract';
import { toolProtocolFor } from '@agentq/config';
import { protocolFor, runAgent, timeBudgetIs, tokenBudgetIs, type AgentOutcome, type StopCondition } from '@agentq/core';
import { createRedisScratchpad, onSubtaskFinished, type JobPayload } from '@agentq/queue';
import { toolsFor } from '@agentq/tools';
import { holdTask } from './hold-task.js';
import type { JobContext } from './job-context.js';
import { recordOutcome } from './record-outcome.js';
import { subtaskPrompt } from './subtask-prompt.js';
import { readPrompt, systemPromptFor } from './system-prompts.js';
import { prepareWorkdir } from './tool-isolation.js';

export async function runAgentJob(job: Job, payload: JobPayload<'agent'>, context: JobContext, token?: string): Promise<string> {
  const { taskId } = payload;
  const { store, transitions, config } = context;
  const record = await store.getRecord(taskId);
  if (!record) return 'skipped';
  if (TERMINAL_STATUSES.has(record.status)) {
    // A job re-run after a crash right after its task ended: finish what follows the end (idempotent).
    if (record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
    return 'skipped';
  }
  const agent = record.agent || 'coder';
  if (record.cancelRequested) {
    const cancelled = await transitions.cancel(record, { from: ['queued', 'running'], agent, worker: context.workerId, reason: 'cancelled before it started' });
    if (cancelled.applied && record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
    return 'cancelled';
  }

  const workdir = path.resolve(config.AGENTQ_DATA_DIR, 'work', taskId);
  await prepareWorkdir(context.isolation, workdir);
  const protocolName = toolProtocolFor(config, agent);
  const tools = toolsFor(agent, config.AGENTQ_SEARCH_URL ? { searchUrl: config.AGENTQ_SEARCH_URL } : {});
  const budgets: StopCondition[] = [];
  if (config.AGENTQ_TOKEN_BUDGET) budgets.push(tokenBudgetIs(config.AGENTQ_TOKEN_BUDGET));
  if (config.AGENTQ_TIME_BUDGET_MS) budgets.push(timeBudgetIs(config.AGENTQ_TIME_BUDGET_MS));

  const end = await holdTask({
    job,
    token,
    context,
    record,
    agent,
    resumed: record.steps > 0 || record.status === 'running',
    run: async (held) =>
      runAgent({
        model: context.model,
        tools,
        protocol: protocolFor(protocolName),
        journal: held.journal,
        systemPrompt: systemPromptFor({ agent, protocol: protocolName, tools }),
        prompt: record.parentId ? await subtaskPrompt({ store, record }) : record.prompt,
        scratchpad: createRedisScratchpad({ redis: store.redis, key: store.keys.scratchpad(record.rootId) }),
        workdir,
        maxSteps: config.AGENTQ_MAX_STEPS,
        stopWhen: budgets,
        usage: { promptTokens: record.promptTokens, completionTokens: record.completionTokens },
        startedAt: Date.parse(record.startedAt ?? '') || Date.now(),
        compaction: { limit: config.AGENTQ_CONTEXT_TOKENS, prompt: readPrompt('summariser') },
        allowPrivateNetwork: config.AGENTQ_FETCH_PRIVATE,
        isolation: context.isolation,
        toolTimeoutMs: config.AGENTQ_TOOL_TIMEOUT_MS,
        toolOutputLimit: config.AGENTQ_TOOL_OUTPUT_LIMIT,
        signal: held.signal,
      }),
  });
  if (end.ended === 'not_held') return 'skipped';
  const outcome: AgentOutcome = end.ended === 'ran' ? end.value : { status: 'failed', reason: 'error', message: end.message, steps: record.steps };
  await recordOutcome({ transitions, task: record, by: end.by, protocol: protocolName, outcome });
  if (record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
  // A failed task is a failed job in BullMQ's counts too; it is recorded already, so not tried again.
  if (outcome.status === 'failed') throw new UnrecoverableError(outcome.message);
  return outcome.status;
}

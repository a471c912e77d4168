/**
 * What a worker does with one agent job: check the task is still wanted, mark it running, run the
 * agent loop from the task's journal, and record how it ended. Transient failures (an LLM endpoint
 * down after the SDK's retries) are thrown so BullMQ tries the job again; the journal makes the next
 * attempt resume where this one stopped.
 */
import { TERMINAL_STATUSES } from '@agentq/contract';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { toolProtocolFor } from '@agentq/config';
import { protocolFor, runAgent, timeBudgetIs, tokenBudgetIs, type AgentOutcome, type StopCondition } from '@agentq/core';
import { LlmError } from '@agentq/llm';
import { agentJobSchema, createRedisJournal, createRedisScratchpad, onSubtaskFinished, type AgentJob } from '@agentq/queue';
import { toolsFor } from '@agentq/tools';
import type { JobContext } from './job-context.js';
import { pausePool } from './pause-pool.js';
import { recordOutcome } from './record-outcome.js';
import { subtaskPrompt } from './subtask-prompt.js';
import { readPrompt, systemPromptFor } from './system-prompts.js';
import { prepareWorkdir } from './tool-isolation.js';

export type AgentJobContext = JobContext;


export async function runAgentJob(job: Job<AgentJob>, context: AgentJobContext, token?: string): Promise<string> {
  const parsed = agentJobSchema.safeParse(job.data);
  if (!parsed.success) throw new UnrecoverableError(`Invalid job payload: ${parsed.error.message}`);
  const { taskId } = parsed.data;
  const { store } = context;
  const record = await store.getRecord(taskId);
  if (!record) return 'skipped';
  if (TERMINAL_STATUSES.has(record.status as never)) {
    // A job re-run after a crash right after its task ended: finish what follows the end (idempotent).
    if (record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
    return 'skipped';
  }
  const agent = record.agent ?? 'coder';

  if (record.cancelRequested === '1') {
    const cancelled = await store.commit({
      taskId,
      expect: ['queued', 'running'],
      status: 'cancelled',
      fields: { finishedAt: new Date().toISOString() },
      events: [{ type: 'task.cancelled', agent, worker: context.workerId, data: { reason: 'cancelled before it started' } }],
    });
    if (cancelled.applied && record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
    return 'cancelled';
  }

  const { config } = context;
  const workdir = path.resolve(config.AGENTQ_DATA_DIR, 'work', taskId);
  await prepareWorkdir(context.isolation, workdir);
  const resumed = Number(record.steps ?? 0) > 0 || record.status === 'running';
  const runToken = randomUUID();
  const started = await store.commit({
    taskId,
    expect: ['queued', 'running'],
    status: 'running',
    fields: { ...(record.startedAt ? {} : { startedAt: new Date().toISOString() }), worker: context.workerId, runToken },
    events: [{ type: 'task.started', agent, worker: context.workerId, data: { attempt: job.attemptsMade + 1, resumed } }],
  });
  // The task moved on meanwhile (cancelled, or waiting for its user): nothing to run.
  if (!started.applied) return 'skipped';

  const { controller, release } = context.cancels.register(taskId);
  const journal = createRedisJournal({
    store,
    taskId,
    agent,
    worker: context.workerId,
    runToken,
    onCommit: (entry, { cancelRequested }) => {
      if (cancelRequested) controller.abort(new Error('cancelled'));
      if (entry.steps !== undefined) void job.updateProgress({ steps: entry.steps }).catch(() => undefined);
    },
  });

  const protocolName = toolProtocolFor(config, agent);
  const tools = toolsFor(agent, config.AGENTQ_SEARCH_URL ? { searchUrl: config.AGENTQ_SEARCH_URL } : {});
  const budgets: StopCondition[] = [];
  if (config.AGENTQ_TOKEN_BUDGET) budgets.push(tokenBudgetIs(config.AGENTQ_TOKEN_BUDGET));
  if (config.AGENTQ_TIME_BUDGET_MS) budgets.push(timeBudgetIs(config.AGENTQ_TIME_BUDGET_MS));

  let outcome: AgentOutcome;
  try {
    outcome = await runAgent({
      model: context.model,
      tools,
      protocol: protocolFor(protocolName),
      journal,
      systemPrompt: systemPromptFor({ agent, protocol: protocolName, tools }),
      prompt: record.parentId ? await subtaskPrompt({ store, record }) : (record.prompt ?? ''),
      scratchpad: createRedisScratchpad({ redis: store.redis, key: store.keys.scratchpad(record.rootId ?? taskId) }),
      workdir,
      maxSteps: config.AGENTQ_MAX_STEPS,
      stopWhen: budgets,
      usage: { promptTokens: Number(record.promptTokens ?? 0), completionTokens: Number(record.completionTokens ?? 0) },
      startedAt: Date.parse(record.startedAt ?? '') || Date.now(),
      compaction: { limit: config.AGENTQ_CONTEXT_TOKENS, prompt: readPrompt('summariser') },
      allowPrivateNetwork: config.AGENTQ_FETCH_PRIVATE,
      isolation: context.isolation,
      toolTimeoutMs: config.AGENTQ_TOOL_TIMEOUT_MS,
      toolOutputLimit: config.AGENTQ_TOOL_OUTPUT_LIMIT,
      signal: controller.signal,
    });
  } catch (error) {
    if (error instanceof LlmError && error.code === 'rate_limited') {
      // The endpoint is saturated: slow the whole pool instead of every job hammering it. The job goes
      // back to the queue without using an attempt, and resumes from its journal.
      release();
      await store.commit({
        taskId,
        runToken,
        expect: ['running'],
        status: 'queued',
        events: [{ type: 'task.queued', agent, worker: context.workerId, data: { reason: error.message, rateLimited: true } }],
      });
      return pausePool(error, context.rateLimit);
    }
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (!lastAttempt) {
      // BullMQ tries the job again after a backoff; the next attempt resumes from the journal.
      await store.commit({
        taskId,
        runToken,
        expect: ['running'],
        status: 'queued',
        events: [{ type: 'task.queued', agent, worker: context.workerId, data: { retry: job.attemptsMade + 2, reason: (error as Error).message } }],
      });
      throw error;
    }
    outcome = { status: 'failed', reason: 'error', message: (error as Error).message, steps: Number(record.steps ?? 0) };
  } finally {
    release();
  }

  if (outcome.status === 'cancelled' && context.cancels.interrupted) {
    // This worker is shutting down, nobody cancelled the task: it goes back to the queue, without
    // using an attempt, and another worker resumes it at its last completed step.
    await store.commit({
      taskId,
      runToken,
      expect: ['running'],
      status: 'queued',
      events: [{ type: 'task.queued', agent, worker: context.workerId, data: { reason: 'its worker shut down; it resumes on another' } }],
    });
    await job.moveToDelayed(Date.now(), token);
    throw new DelayedError();
  }
  await recordOutcome({ store, taskId, runToken, agent, workerId: context.workerId, protocol: protocolName, outcome });
  if (record.parentId) await onSubtaskFinished({ store, queues: context.queues, taskId });
  // A failed task is a failed job in BullMQ's counts too; it is recorded already, so not tried again.
  if (outcome.status === 'failed') throw new UnrecoverableError(outcome.message);
  return outcome.status;
}

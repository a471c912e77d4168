/**
 * `GET /v1/overview`: the dashboard's landing page in one call. Tasks by status (counted in the task
 * list's status bands), finished jobs per minute over the last hour (every pool's, as the
 * workers count them: finished-jobs.ts), and, from the most recent ended tasks (a sample, read at once), tokens and model time per
 * model, the slowest and the most expensive tasks, and why tasks failed. A tenant's key sees its own
 * tasks; counts of jobs per minute are the pools' (as on the pools page).
 */
import { type OverviewView, type TaskStatus } from '@agentq/contract';
import { Router } from 'express';
import type { TaskRecord, TaskStore } from '@agentq/store';
import { type AgentQueues } from '@agentq/scheduling';
import { principalOf } from '../api-auth.js';

/** Minutes of history in the charts. */
const MINUTES = 60;
/** Ended tasks read for the tables (the newest). */
const SAMPLE = 200;
/**
 * What the tables need of each: a record's own fields and a dozen small ones, never its result, plan or
 * metadata (a long result read 200 times a poll would be megabytes from Redis every few seconds).
 */
const TABLE_FIELDS = [
  'id',
  'rootId',
  'tenant',
  'agent',
  'status',
  'prompt',
  'model',
  'steps',
  'promptTokens',
  'completionTokens',
  'modelMs',
  'costMicroUsd',
  'error',
  'startedAt',
  'finishedAt',
] as const;
const ENDED: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];
const LISTED = 8;

export function overviewRouter(options: { queues: AgentQueues; store: TaskStore }): Router {
  const { store } = options;
  const router = Router();
  router.get('/v1/overview', async (_request, response) => {
    const principal = principalOf(response);
    const tenant = principal.admin ? undefined : principal.tenant;
    const now = Date.now();
    const [counts, perPool, records] = await Promise.all([
      store.countByStatus(tenant),
      Promise.all(options.queues.pools.map((pool) => store.finishedJobs(pool, MINUTES, now))),
      // The newest ended tasks of any end, by their order.
      store.newestRecords({ tenant, statuses: ENDED, count: SAMPLE, fields: TABLE_FIELDS }),
    ]);
    const completed = new Array<number>(MINUTES).fill(0);
    const failed = new Array<number>(MINUTES).fill(0);
    for (const finished of perPool) {
      finished.completed.forEach((count, index) => (completed[index]! += count));
      finished.failed.forEach((count, index) => (failed[index]! += count));
    }
    const body: OverviewView = {
      counts,
      perMinute: {
        start: new Date(Math.floor(now / 60_000) * 60_000 - (MINUTES - 1) * 60_000).toISOString(),
        completed,
        failed,
      },
      sample: summarise(records),
    };
    response.json(body);
  });
  return router;
}

const durationOf = (record: TaskRecord) =>
  record.startedAt && record.finishedAt ? Date.parse(record.finishedAt) - Date.parse(record.startedAt) : 0;
const tokensOf = (record: TaskRecord) => record.promptTokens + record.completionTokens;
const brief = (record: TaskRecord) => ({
  id: record.id,
  prompt: record.prompt.slice(0, 160),
  agent: record.agent,
  status: record.status,
  durationMs: durationOf(record),
  tokens: tokensOf(record),
});

function summarise(records: readonly TaskRecord[]): OverviewView['sample'] {
  const models = new Map<
    string,
    {
      model: string;
      tasks: number;
      promptTokens: number;
      completionTokens: number;
      costMicroUsd: number;
      modelMs: number;
      calls: number;
    }
  >();
  const agents = new Map<string, { agent: string; modelMs: number; calls: number; tasks: number; failed: number }>();
  const failures = new Map<string, { code: string; count: number; example: { id: string; message: string } }>();
  for (const record of records) {
    const model = record.model ?? 'unknown';
    const byModel = models.get(model) ?? {
      model,
      tasks: 0,
      promptTokens: 0,
      completionTokens: 0,
      costMicroUsd: 0,
      modelMs: 0,
      calls: 0,
    };
    byModel.costMicroUsd += record.costMicroUsd;
    byModel.tasks++;
    byModel.promptTokens += record.promptTokens;
    byModel.completionTokens += record.completionTokens;
    byModel.modelMs += record.modelMs;
    byModel.calls += record.steps;
    models.set(model, byModel);
    const byAgent = agents.get(record.agent) ?? { agent: record.agent, modelMs: 0, calls: 0, tasks: 0, failed: 0 };
    byAgent.tasks++;
    byAgent.modelMs += record.modelMs;
    byAgent.calls += record.steps;
    if (record.status === 'failed') byAgent.failed++;
    agents.set(record.agent, byAgent);
    if (record.status === 'failed' && record.error) {
      const failure = failures.get(record.error.code) ?? {
        code: record.error.code,
        count: 0,
        example: { id: record.id, message: record.error.message.slice(0, 300) },
      };
      failure.count++;
      failures.set(record.error.code, failure);
    }
  }
  const latency = (entry: { modelMs: number; calls: number }) =>
    entry.calls ? Math.round(entry.modelMs / entry.calls) : null;
  return {
    size: records.length,
    models: [...models.values()]
      .sort((a, b) => b.promptTokens + b.completionTokens - (a.promptTokens + a.completionTokens))
      .map(({ modelMs, calls, costMicroUsd, ...entry }) => ({
        ...entry,
        calls,
        costUsd: costMicroUsd / 1_000_000,
        modelMsPerCall: latency({ modelMs, calls }),
      })),
    agents: [...agents.values()].map(({ modelMs, calls, ...entry }) => ({
      ...entry,
      calls,
      modelMsPerCall: latency({ modelMs, calls }),
    })),
    slowest: [...records]
      .sort((a, b) => durationOf(b) - durationOf(a))
      .slice(0, LISTED)
      .map(brief),
    costliest: [...records]
      .sort((a, b) => tokensOf(b) - tokensOf(a))
      .slice(0, LISTED)
      .map(brief),
    failures: [...failures.values()].sort((a, b) => b.count - a.count),
  };
}

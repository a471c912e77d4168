/**
 * `GET /metrics`: the API process's Prometheus metrics, and the system's as Redis has them now (queue
 * depth and active jobs per pool, workers online per pool, each configured tenant's usage against its
 * limits), read at each scrape. With API keys set it needs an admin key (a scrape config's
 * `authorization`): the figures span every tenant. The tenants are the keys' (and `default`): named by
 * the operator, never by a request, so a client cannot add series.
 */
import type { UsageView } from '@agentq/contract';
import { Router, type RequestHandler } from 'express';
import { onlineWorkers, tenantUsage, type RoomLimits, type TaskStore, type WebhookDeliveries } from '@agentq/store';
import { type AgentQueues } from '@agentq/scheduling';
import type { Metrics } from '@agentq/telemetry';

const STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

export function metricsRouter(options: {
  metrics: Metrics;
  queues: AgentQueues;
  guard: RequestHandler[];
  store: TaskStore;
  room: (tenant: string) => RoomLimits;
  /** The tenants whose usage is shown. */
  tenants: readonly string[];
  deliveries: WebhookDeliveries;
}): Router {
  const { metrics } = options;
  const router = Router();
  router.get('/metrics', ...options.guard, async (_request, response) => {
    const [counts, admission, workers, usages, oldestPendingMs] = await Promise.all([
      Promise.all(options.queues.pools.map((pool) => options.queues.jobCounts(pool, ...STATES))),
      Promise.all(options.queues.pools.map((pool) => options.queues.waiting(pool))),
      onlineWorkers(options.store),
      Promise.all(options.tenants.map((tenant) => tenantUsage(options.store, tenant, options.room(tenant)))),
      options.deliveries.oldestPendingMs(),
    ]);
    metrics.webhookOldestPending.set(oldestPendingMs / 1000);
    for (const usage of usages) showUsage(metrics, usage);
    options.queues.pools.forEach((pool, index) => {
      for (const state of STATES) metrics.queueJobs.set({ pool, state }, counts[index]![state] ?? 0);
      // Not in the queue yet: waiting for their tenant's turn (fair admission).
      metrics.queueJobs.set(
        { pool, state: 'admission' },
        Object.values(admission[index]!).reduce((total, count) => total + count, 0),
      );
      metrics.workersOnline.set({ pool }, workers.filter((worker) => worker.pools.includes(pool)).length);
    });
    response.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}

/** A tenant's usage (tenant-usage.ts) as gauges, with how much of each limit it uses (1: reached). */
function showUsage(metrics: Metrics, usage: UsageView): void {
  const { tenant, tasks, limits, today } = usage;
  metrics.tenantTasks.set({ tenant, state: 'unfinished' }, tasks.unfinished);
  metrics.tenantTasks.set({ tenant, state: 'stored' }, tasks.stored);
  metrics.tenantWrittenBytes.set({ tenant }, usage.writtenBytes);
  const used = (limit: string, value: number, of: number | null | undefined) => {
    if (of) metrics.tenantLimitUsed.set({ tenant, limit }, value / of);
  };
  used('unfinished', tasks.unfinished, limits.unfinished);
  used('stored', tasks.stored, limits.stored);
  used('writtenBytes', usage.writtenBytes, limits.writtenBytes);
  if (today) {
    metrics.tenantSpentToday.set({ tenant, unit: 'tokens' }, today.tokens);
    metrics.tenantSpentToday.set({ tenant, unit: 'usd' }, today.usd);
    used('dailyTokens', today.tokens, limits.daily?.tokens);
    used('dailyUsd', today.usd, limits.daily?.usd);
  }
}

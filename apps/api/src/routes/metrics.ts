/**
 * `GET /metrics`: the API process's Prometheus metrics, and the system's as Redis has them now (queue
 * depth and active jobs per pool, workers online per pool), read at each scrape. With API keys set it
 * needs an admin key (a scrape config's `authorization`): the figures span every tenant.
 */
import { AGENT_POOLS } from '@agentq/contract';
import { Router, type RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { onlineWorkers, type AgentQueues, type Keys } from '@agentq/queue';
import type { Metrics } from '@agentq/telemetry';

const STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

export function metricsRouter(options: { metrics: Metrics; queues: AgentQueues; redis: Redis; keys: Keys; guard: RequestHandler[] }): Router {
  const { metrics } = options;
  const router = Router();
  router.get('/metrics', ...options.guard, async (_request, response) => {
    const [counts, admission, workers] = await Promise.all([
      Promise.all(AGENT_POOLS.map((pool) => options.queues[pool].getJobCounts(...STATES))),
      Promise.all(AGENT_POOLS.map((pool) => options.queues.admission.waiting(pool))),
      onlineWorkers({ redis: options.redis, keys: options.keys }),
    ]);
    AGENT_POOLS.forEach((pool, index) => {
      for (const state of STATES) metrics.queueJobs.set({ pool, state }, counts[index]![state] ?? 0);
      // Not in the queue yet: waiting for their tenant's turn (fair admission).
      metrics.queueJobs.set({ pool, state: 'admission' }, Object.values(admission[index]!).reduce((total, count) => total + count, 0));
      metrics.workersOnline.set({ pool }, workers.filter((worker) => worker.pools.includes(pool)).length);
    });
    response.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}

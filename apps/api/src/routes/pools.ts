/** Per pool: queue depths, throughput, and the worker processes online. */
import { Router } from 'express';
import type { Redis } from 'ioredis';
import { AGENT_POOLS, onlineWorkers, type AgentQueues, type Keys, type PoolIsolation } from '@agentq/queue';
import { principalOf } from '../api-auth.js';

/** Minutes of throughput history shown. */
const HISTORY_MINUTES = 15;

export function poolsRouter(options: { queues: AgentQueues; redis: Redis; keys: Keys }): Router {
  const router = Router();
  router.get('/v1/pools', async (_request, response) => {
    // A tenant sees the counts; which machines and processes serve them is the operator's business.
    const { admin } = principalOf(response);
    const workers = await onlineWorkers({ redis: options.redis, keys: options.keys });
    const pools = await Promise.all(
      AGENT_POOLS.map(async (name) => {
        const queue = options.queues[name];
        const [counts, completed, failed] = await Promise.all([
          queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed', 'completed'),
          queue.getMetrics('completed', 0, HISTORY_MINUTES - 2),
          queue.getMetrics('failed', 0, HISTORY_MINUTES - 2),
        ]);
        const serving = workers.filter((worker) => worker.pools.includes(name));
        // BullMQ writes a minute's data point when a later minute begins, newest first; what finished
        // since then is the running minute. The chart reads oldest first.
        const thisMinute = completed.meta.count - completed.meta.prevCount + (failed.meta.count - failed.meta.prevCount);
        const past = Array.from({ length: HISTORY_MINUTES - 1 }, (_, index) => (completed.data[index] ?? 0) + (failed.data[index] ?? 0)).reverse();
        const perMinute = [...past, thisMinute];
        return {
          name,
          counts: {
            waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
            active: counts.active ?? 0,
            delayed: counts.delayed ?? 0,
            failed: counts.failed ?? 0,
            completed: counts.completed ?? 0,
          },
          jobsPerMinute: perMinute.at(-1) ?? 0,
          throughput: perMinute,
          workers: admin ? serving.map(({ id, host, pid, startedAt, lastSeen, concurrency }) => ({ id, host, pid, startedAt, lastSeen, concurrency: concurrency[name] ?? 0 })) : [],
          workersOnline: serving.length,
          concurrency: serving.reduce((total, worker) => total + (worker.concurrency[name] ?? 0), 0),
          isolation: distinctIsolation(serving.map((worker) => worker.isolation?.[name]).filter((one): one is PoolIsolation => one !== undefined), admin),
        };
      }),
    );
    response.json({ pools, workers: workers.length });
  });
  return router;
}

/** How the workers of a pool run its tools, each way once (a reason only for admins: it names paths). */
function distinctIsolation(all: readonly PoolIsolation[], admin: boolean): PoolIsolation[] {
  const seen = new Map<string, PoolIsolation>();
  for (const one of all) {
    const shown = one.kind === 'unavailable' && !admin ? { kind: one.kind, reason: 'see the worker logs' } : one;
    seen.set(JSON.stringify(shown), shown);
  }
  return [...seen.values()];
}

/** Per pool: queue depths, throughput, and the worker processes online. */
import type { PoolIsolation } from '@agentq/contract';
import { Router } from 'express';
import { onlineWorkers, type TaskStore } from '@agentq/store';
import { type AgentQueues } from '@agentq/scheduling';
import { principalOf } from '../api-auth.js';

/** Minutes of throughput history shown. */
const HISTORY_MINUTES = 15;

export function poolsRouter(options: {
  queues: AgentQueues;
  store: TaskStore;
  /** Each pool's description (the configuration file's). */
  descriptions: Readonly<Record<string, string>>;
}): Router {
  const router = Router();
  router.get('/v1/pools', async (_request, response) => {
    // A tenant sees the counts; which machines and processes serve them is the operator's business.
    const { admin } = principalOf(response);
    const workers = await onlineWorkers(options.store);
    const pools = await Promise.all(
      options.queues.pools.map(async (name) => {
        const [counts, finished, byTenant] = await Promise.all([
          options.queues.jobCounts(name, 'waiting', 'prioritized', 'active', 'delayed', 'failed'),
          options.store.finishedJobs(name, HISTORY_MINUTES),
          options.queues.waiting(name),
        ]);
        const admission = Object.values(byTenant).reduce((total, count) => total + count, 0);
        const serving = workers.filter((worker) => worker.pools.includes(name));
        const perMinute = finished.completed.map((count, index) => count + finished.failed[index]!);
        return {
          name,
          description: options.descriptions[name] ?? '',
          counts: {
            waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + admission,
            admission,
            active: counts.active ?? 0,
            delayed: counts.delayed ?? 0,
            failed: counts.failed ?? 0,
            // Completed jobs are removed at once (the task holds the outcome): this is how many ever.
            completed: finished.total.completed,
          },
          jobsPerMinute: perMinute.at(-1) ?? 0,
          throughput: perMinute,
          workers: admin
            ? serving.map(({ id, host, pid, startedAt, lastSeen, concurrency }) => ({
                id,
                host,
                pid,
                startedAt,
                lastSeen,
                concurrency: concurrency[name] ?? 0,
              }))
            : [],
          workersOnline: serving.length,
          concurrency: serving.reduce((total, worker) => total + (worker.concurrency[name] ?? 0), 0),
          isolation: distinctIsolation(
            serving.map((worker) => worker.isolation?.[name]).filter((one): one is PoolIsolation => one !== undefined),
            admin,
          ),
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

import { poolNames, type Config } from '@agentq/config';
import { startWorker } from '@agentq/worker';
import { onShutdown } from '../shutdown.js';
import { UsageError } from '../usage-error.js';

/** `agentq worker --pools coder,file [--concurrency N]`: one worker process for those pools. */
export async function workerCommand(config: Config, flags: { pools?: string; concurrency?: string }): Promise<void> {
  const pools = parsePools(flags.pools, poolNames(config));
  const concurrency = flags.concurrency === undefined ? undefined : Number(flags.concurrency);
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0)) {
    throw new UsageError(`--concurrency must be a positive whole number, got "${flags.concurrency}".`);
  }
  const worker = await startWorker({ config, pools, ...(concurrency ? { concurrency } : {}) });
  const { logger } = worker;
  logger.info(
    {
      concurrency: concurrency ?? config.AGENTQ_CONCURRENCY,
      ...(worker.metricsUrl ? { metrics: worker.metricsUrl } : {}),
    },
    `serving ${pools.join(', ')} (concurrency ${concurrency ?? config.AGENTQ_CONCURRENCY} per pool)`,
  );
  for (const [pool, tools] of worker.tools) {
    if (tools.summary.kind === 'not-needed') continue;
    if (tools.summary.kind === 'jail')
      logger.info({ pool, isolation: tools.summary }, `${pool} tools: ${tools.description}`);
    else logger.warn({ pool, isolation: tools.summary }, `${pool} tools: ${tools.description}`);
  }
  process.send?.({ type: 'ready' });
  onShutdown(() => worker.close(), logger);
}

/**
 * The pools named, each the planner or an agent of the configuration file (`agents`: every agent); all
 * of them without a name.
 */
function parsePools(value: string | undefined, known: readonly string[]): string[] {
  if (!value) return [...known];
  const pools = value
    .split(',')
    .map((pool) => pool.trim())
    .filter(Boolean)
    .flatMap((pool) => (pool === 'agents' ? known.filter((name) => name !== 'planner') : [pool]));
  const unknown = pools.filter((pool) => !known.includes(pool));
  if (unknown.length)
    throw new UsageError(
      `Unknown pool(s): ${unknown.join(', ')}. Pools: ${known.join(', ')} (the planner and the agents of the configuration file).`,
    );
  return pools;
}

/**
 * B4: one worker process running 2,000 loops at once against a model that takes 200 ms, against raw
 * BullMQ jobs that sleep 200 ms at the same concurrency. Also the worker's event-loop delay (p99) and
 * peak RSS during the run: the loops must not starve each other (monitorEventLoopDelay, probe.mjs).
 */
import { startAgentq } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';
import { alternate, median } from '../lib/stats.mjs';

const CONCURRENCY = 2_000;

export async function measureManyLoops({ redis, quick }) {
  const count = quick ? 6_000 : 12_000;
  const rounds = quick ? 1 : 2;
  const model = await startModel({ script: 'single', latencyMs: 200 });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'b4',
    pools: 'casual',
    concurrency: CONCURRENCY,
  });
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'b4-raw', concurrency: CONCURRENCY, sleepMs: 200 });
  const runAgentq = (n) => agentq.runTasks(redis.client, n);

  const measured = (process, run) => async () => {
    process.resetProbe();
    const started = performance.now();
    await run(count);
    const seconds = (performance.now() - started) / 1000;
    const probe = await process.probe();
    return { rate: count / seconds, loopP99: probe.loop.p99, peakRssMb: probe.peakRssMb };
  };
  try {
    await runAgentq(2_000);
    await raw.run(2_000);
    const samples = await alternate(
      { agentq: measured(agentq.worker, runAgentq), raw: measured(raw.worker, (n) => raw.run(n)) },
      rounds,
    );
    const of = (name, field) => median(samples[name].map((sample) => sample[field]));
    return {
      count,
      rounds,
      agentq: {
        rate: of('agentq', 'rate'),
        loopP99: of('agentq', 'loopP99'),
        peakRssMb: Math.max(...samples.agentq.map((sample) => sample.peakRssMb)),
      },
      raw: {
        rate: of('raw', 'rate'),
        loopP99: of('raw', 'loopP99'),
        peakRssMb: Math.max(...samples.raw.map((sample) => sample.peakRssMb)),
      },
    };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), model.stop()]);
  }
}

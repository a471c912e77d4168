/**
 * B1 and B2: single-step tasks (one model call, no tool) through one worker process at concurrency
 * 50 with a 0 ms model, against no-op BullMQ jobs through one raw worker process at the same
 * concurrency. Also what each task costs Redis: the commands it ran (those inside scripts included)
 * and its CPU.
 */
import { startAgentq } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';
import { alternate, median } from '../lib/stats.mjs';

export async function measureSingleStep({ redis, quick }) {
  const count = quick ? 1_000 : 4_000;
  const rounds = quick ? 2 : 3;
  const model = await startModel({ script: 'single' });
  const agentq = await startAgentq({ redisUrl: redis.url, modelURL: model.baseURL, prefix: 'b1', pools: 'casual', concurrency: 50 });
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'b1-raw', concurrency: 50 });
  const runAgentq = (n) => agentq.runTasks(redis.client, n);

  const measured = (process, run) => async () => {
    const [cpuBefore, redisBefore] = [await process.probe(), await redis.usage()];
    const started = performance.now();
    await run(count);
    const seconds = (performance.now() - started) / 1000;
    const [cpuAfter, redisAfter] = [await process.probe(), await redis.usage()];
    return {
      rate: count / seconds,
      workerCpuMs: (cpuAfter.cpuMs - cpuBefore.cpuMs) / count,
      commands: (redisAfter.calls - redisBefore.calls) / count,
      redisCpuMs: (redisAfter.cpuMs - redisBefore.cpuMs) / count,
    };
  };
  try {
    // Warm-up: connections, scripts loaded, and the code optimised. A worker runs for hours; its first
    // thousand tasks, run before V8 optimised its hot code, cost it twice the CPU of the next ones.
    await runAgentq(2_000);
    await raw.run(2_000);
    const samples = await alternate({ agentq: measured(agentq.worker, runAgentq), raw: measured(raw.worker, (n) => raw.run(n)) }, rounds);
    const of = (name, field) => median(samples[name].map((sample) => sample[field]));
    return { count, rounds, agentq: { rate: of('agentq', 'rate'), workerCpuMs: of('agentq', 'workerCpuMs'), commands: of('agentq', 'commands'), redisCpuMs: of('agentq', 'redisCpuMs') }, raw: { rate: of('raw', 'rate'), workerCpuMs: of('raw', 'workerCpuMs'), commands: of('raw', 'commands'), redisCpuMs: of('raw', 'redisCpuMs') } };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), model.stop()]);
  }
}

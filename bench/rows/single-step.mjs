/**
 * B1 and B2: single-step tasks (one model call, no tool) through one worker process at concurrency
 * 50 with a 0 ms model, against no-op BullMQ jobs through one raw worker process at the same
 * concurrency; and, as the floor under a step, the same raw worker whose jobs each make the model call
 * through the openai SDK (raw-worker.mjs) and nothing else. Also what each task costs Redis: the
 * commands it ran (those inside scripts included) and its CPU; and the CPU every process of the run
 * spent per task, and how many of the machine's cores they kept busy: B1's rate is what the machine's
 * cores give all of them together.
 */
import { availableParallelism } from 'node:os';
import { startAgentq } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';
import { alternate, median } from '../lib/stats.mjs';

export async function measureSingleStep({ redis, quick }) {
  const count = quick ? 1_000 : 4_000;
  const rounds = quick ? 2 : 3;
  const model = await startModel({ script: 'single' });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'b1',
    pools: 'casual',
    concurrency: 50,
  });
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'b1-raw', concurrency: 50 });
  const rawModel = await startRawBullmq({
    redisUrl: redis.url,
    prefix: 'b1-raw-model',
    concurrency: 50,
    modelURL: model.baseURL,
  });
  const runAgentq = (n) => agentq.runTasks(redis.client, n);

  // The other processes of a run: agentq's API and the model double, none for raw BullMQ; this
  // process is the client of both (agentq's submits and polls, raw BullMQ's addBulk).
  const cpuOf = async (other) => (other ? (await other.probe()).cpuMs : 0);
  const ownCpuMs = () => {
    const { user, system } = globalThis.process.cpuUsage();
    return (user + system) / 1000;
  };
  const measured =
    (process, run, { api, model: double } = {}) =>
    async () => {
      const [cpuBefore, redisBefore, apiBefore, modelBefore, clientBefore] = [
        await process.probe(),
        await redis.usage(),
        await cpuOf(api),
        await cpuOf(double),
        ownCpuMs(),
      ];
      const started = performance.now();
      await run(count);
      const ms = performance.now() - started;
      const [cpuAfter, redisAfter, apiAfter, modelAfter, clientAfter] = [
        await process.probe(),
        await redis.usage(),
        await cpuOf(api),
        await cpuOf(double),
        ownCpuMs(),
      ];
      const workerCpuMs = (cpuAfter.cpuMs - cpuBefore.cpuMs) / count;
      // Its main thread's share (Linux only): the rest is V8's helper threads, which a CPU profile does not show.
      const workerMainThreadCpuMs =
        cpuAfter.mainThreadCpuMs === undefined
          ? undefined
          : (cpuAfter.mainThreadCpuMs - cpuBefore.mainThreadCpuMs) / count;
      const redisCpuMs = (redisAfter.cpuMs - redisBefore.cpuMs) / count;
      const apiCpuMs = (apiAfter - apiBefore) / count;
      const modelCpuMs = (modelAfter - modelBefore) / count;
      const clientCpuMs = (clientAfter - clientBefore) / count;
      const totalCpuMs = workerCpuMs + redisCpuMs + apiCpuMs + modelCpuMs + clientCpuMs;
      return {
        rate: (count / ms) * 1000,
        workerCpuMs,
        workerMainThreadCpuMs,
        commands: (redisAfter.calls - redisBefore.calls) / count,
        redisCpuMs,
        apiCpuMs,
        modelCpuMs,
        clientCpuMs,
        totalCpuMs,
        busyCores: (totalCpuMs * count) / ms,
      };
    };
  try {
    // Warm-up: connections, scripts loaded, and the code optimised. A worker runs for hours; its first
    // thousand tasks, run before V8 optimised its hot code, cost it twice the CPU of the next ones.
    await runAgentq(2_000);
    await raw.run(2_000);
    await rawModel.run(2_000);
    const samples = await alternate(
      {
        agentq: measured(agentq.worker, runAgentq, { api: agentq.api, model }),
        raw: measured(raw.worker, (n) => raw.run(n)),
        rawModel: measured(rawModel.worker, (n) => rawModel.run(n), { model }),
      },
      rounds,
    );
    const fields = [
      'rate',
      'workerCpuMs',
      'workerMainThreadCpuMs',
      'commands',
      'redisCpuMs',
      'apiCpuMs',
      'modelCpuMs',
      'clientCpuMs',
      'totalCpuMs',
      'busyCores',
    ];
    const of = (name) =>
      Object.fromEntries(fields.map((field) => [field, median(samples[name].map((sample) => sample[field]))]));
    return {
      count,
      rounds,
      cores: availableParallelism(),
      agentq: of('agentq'),
      raw: of('raw'),
      rawModel: of('rawModel'),
    };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), rawModel.stop(), model.stop()]);
  }
}

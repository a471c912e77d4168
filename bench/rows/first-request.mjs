/**
 * B3: from a submit to the model's first request, one task at a time (an idle worker picks it up),
 * against BullMQ's add -> processor on an idle raw worker.
 */
import { startAgentq, until } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';
import { alternate, percentile } from '../lib/stats.mjs';

export async function measureFirstRequest({ redis, quick }) {
  const samples = quick ? 60 : 200;
  const model = await startModel({ script: 'single', announce: true });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'b3',
    pools: 'casual',
    concurrency: 50,
  });
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'b3-raw', concurrency: 50 });
  let next = 0;
  const once = async () => {
    const prompt = `first ${next++}`;
    const before = (await agentq.ended(redis.client)).ended;
    const arrived = model.arrival(prompt);
    const sentAt = performance.timeOrigin + performance.now();
    await agentq.submit([{ prompt, agent: 'casual' }]);
    const lag = (await arrived) - sentAt;
    // The worker idle again before the next one.
    await until(async () => (await agentq.ended(redis.client)).ended, before + 1, 2);
    return lag;
  };
  try {
    for (let warm = 0; warm < 20; warm++) {
      await once();
      await raw.lag();
    }
    const lags = await alternate({ agentq: once, raw: () => raw.lag() }, samples);
    return {
      samples,
      agentq: { p50: percentile(lags.agentq, 50), p99: percentile(lags.agentq, 99) },
      raw: { p50: percentile(lags.raw, 50), p99: percentile(lags.raw, 99) },
    };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), model.stop()]);
  }
}

/**
 * The Redis CPU row, counted instead of timed: the instructions Redis runs per single-step task (its
 * submit, run, end and events' compaction, as in B1) and per raw BullMQ no-op job with agentq's job
 * options, each on a redis-server under callgrind (counted-redis.mjs). A change to a script or to a
 * step's commands shows here to within about 1% on this noisy machine, where the CPU row moves 20%.
 */
import { createKeys } from '@agentq/store';
import { startAgentq, until } from '../lib/agentq.mjs';
import { startCountedRedis } from '../lib/counted-redis.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';

export async function measureRedisInstructions({ quick }) {
  const count = quick ? 400 : 1_000;
  return { count, agentq: await perTask(count), raw: await perJob(count) };
}

async function perTask(count) {
  const redis = await startCountedRedis();
  const model = await startModel({ script: 'single' });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'agentq',
    pools: 'casual',
    concurrency: 50,
  });
  const { toCompact } = createKeys(agentq.prefix);
  const run = async (n) => {
    // Polled rarely: the polls are counted too (a few thousand instructions each). Then until every
    // ended task's events were compacted (none left to compact: minus their count reaches 0).
    await agentq.runTasks(redis.client, n, { everyMs: 500 });
    await until(async () => -(await redis.client.zcard(toCompact)), 0, 500);
  };
  try {
    await run(100);
    return (await redis.count(() => run(count))) / count;
  } finally {
    await Promise.all([agentq.stop(), model.stop()]);
    await redis.stop();
  }
}

async function perJob(count) {
  const redis = await startCountedRedis();
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'raw', concurrency: 50 });
  try {
    await raw.run(100);
    return (await redis.count(() => raw.run(count))) / count;
  } finally {
    await raw.stop();
    await redis.stop();
  }
}

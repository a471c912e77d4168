/**
 * What a task costs Redis, counted instead of timed: the instructions Redis runs per single-step task
 * (its submit, run and end, its events packed or compacted, as in B1), per 3-step task (write a file,
 * run bash, answer: the further steps' cost is the difference, halved), and per raw BullMQ job added
 * as agentq adds one (its id, its data, its options), each on a redis-server under callgrind
 * (counted-redis.mjs). A change to a script or to a step's commands shows here to within about 1% on
 * this noisy machine, where the CPU row moves 20%.
 */
import { createKeys } from '@agentq/store';
import { startAgentq, until } from '../lib/agentq.mjs';
import { startCountedRedis } from '../lib/counted-redis.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';

export async function measureRedisInstructions({ quick }) {
  const count = quick ? 400 : 1_000;
  const single = await perTask(count, { script: 'single', agent: 'casual' });
  const threeSteps = await perTask(Math.round(count / 2), { script: 'three-step', agent: 'coder' });
  return { count, agentq: single, furtherStep: (threeSteps - single) / 2, threeSteps, raw: await perJob(count) };
}

async function perTask(count, { script, agent }) {
  const redis = await startCountedRedis();
  const model = await startModel({ script });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'agentq',
    pools: agent,
    concurrency: 50,
  });
  const { toCompact } = createKeys(agentq.prefix).cells[0];
  const run = async (n) => {
    // Polled rarely: the polls are counted too (a few thousand instructions each). Then until every
    // ended task's events were packed or compacted (none left to compact: minus their count reaches 0).
    await agentq.runTasks(redis.client, n, { agent, everyMs: 500 });
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

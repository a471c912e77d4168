/** B5: one `POST /v1/tasks` of 10,000 tasks, against one BullMQ `addBulk` of 10,000 jobs. */
import { startAgentq } from '../lib/agentq.mjs';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { RAW_JOB_OPTIONS } from '../lib/raw-bullmq.mjs';
import { alternate, median } from '../lib/stats.mjs';

const COUNT = 10_000;

export async function measureSubmit({ redis, quick }) {
  const rounds = quick ? 3 : 7;
  // The API alone: nothing runs what is submitted (no worker, no model).
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: 'http://127.0.0.1:9/v1',
    prefix: 'b5',
    pools: null,
  });
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  connection.on('error', () => undefined);
  const queue = new Queue('raw', { connection, prefix: 'b5-raw' });
  let batch = 0;
  const tasks = () =>
    Array.from({ length: COUNT }, (_, index) => ({
      prompt: `submit ${batch} ${index}: write a haiku about queues`,
      agent: 'casual',
    }));
  const timed = (run) => async () => {
    const list = tasks();
    batch++;
    const started = performance.now();
    await run(list);
    return performance.now() - started;
  };
  try {
    await agentq.submit(tasks().slice(0, 1_000));
    await queue.addBulk(
      tasks()
        .slice(0, 1_000)
        .map((data) => ({ name: 'job', data, opts: RAW_JOB_OPTIONS })),
    );
    const samples = await alternate(
      {
        agentq: timed((list) => agentq.submit(list)),
        raw: timed((list) => queue.addBulk(list.map((data) => ({ name: 'job', data, opts: RAW_JOB_OPTIONS })))),
      },
      rounds,
    );
    return { count: COUNT, rounds, agentq: { ms: median(samples.agentq) }, raw: { ms: median(samples.raw) } };
  } finally {
    await agentq.stop();
    await queue.close();
    connection.disconnect();
  }
}

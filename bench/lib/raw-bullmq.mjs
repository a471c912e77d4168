/**
 * Raw BullMQ, as the reference of every queue figure: a queue added to from this process, and a
 * worker process (raw-worker.mjs), with agentq's job options (attempts, backoff, removed once
 * completed; no priority, no worker metrics: scheduling/src/jobs.ts) and a job as agentq adds it: its
 * own id (a task's), its data a task id and a tenant.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { request, startProcess, waitFor } from './processes.mjs';

const WORKER = new URL('./raw-worker.mjs', import.meta.url).pathname;
export const RAW_JOB_OPTIONS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: true,
  removeOnFail: { age: 24 * 3600 },
};

/** `modelURL`: each job makes a model call through the openai SDK there (raw-worker.mjs). */
export async function startRawBullmq({ redisUrl, prefix = 'bench-raw', concurrency = 50, sleepMs = 0, modelURL }) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connection.on('error', () => undefined);
  const queue = new Queue('raw', { connection, prefix });
  const worker = startProcess({
    script: WORKER,
    args: [
      ...['--queue', 'raw', '--prefix', prefix, '--concurrency', String(concurrency), '--sleep', String(sleepMs)],
      ...(modelURL ? ['--model', modelURL] : []),
    ],
    env: { REDIS_URL: redisUrl },
    ready: (message) => message?.ready,
  });
  await worker.started;
  return {
    queue,
    worker,
    /** Adds `count` jobs in one addBulk call per 1,000 and resolves once the worker completed them all. */
    async run(count, data = (_, id) => ({ taskId: id, tenant: 'default' }), options = RAW_JOB_OPTIONS) {
      await request(worker.child, { expect: count }, (message) => message?.expecting);
      const done = waitFor(worker.child, (message) => message?.done);
      for (let start = 0; start < count; start += 1_000) {
        await queue.addBulk(
          Array.from({ length: Math.min(1_000, count - start) }, (_, index) => {
            const id = randomUUID();
            return { name: 'agent', data: data(start + index, id), opts: { ...options, jobId: id } };
          }),
        );
      }
      await done;
    },
    /** `count` jobs of `data` at once; resolves with each one's time from before its `add` to its end (ms). */
    async took(count, data) {
      const took = [];
      const listen = (message) => message?.took !== undefined && took.push(message.took);
      worker.child.on('message', listen);
      try {
        await this.run(count, (index, id) => ({
          ...data(index, id),
          addedAt: performance.timeOrigin + performance.now(),
        }));
      } finally {
        worker.child.off('message', listen);
      }
      return took;
    },
    /** One job with `sentAt`; resolves with the time from before `add` to its processor (ms). */
    async lag() {
      await request(worker.child, { expect: 1 }, (message) => message?.expecting);
      const lag = waitFor(worker.child, (message) => message?.lag);
      const done = waitFor(worker.child, (message) => message?.done);
      await queue.add('job', { sentAt: performance.timeOrigin + performance.now() }, RAW_JOB_OPTIONS);
      const [value] = await Promise.all([lag, done]);
      return value;
    },
    /** Bytes Redis holds for each kept job (its hash, and its share of the completed set). */
    async bytesPerJob(redis) {
      const ids = await redis.zrange(`${prefix}:raw:completed`, 0, -1);
      let bytes = Number((await redis.memory('USAGE', `${prefix}:raw:completed`, 'SAMPLES', '0')) ?? 0);
      for (const id of ids) bytes += Number((await redis.memory('USAGE', `${prefix}:raw:${id}`, 'SAMPLES', '0')) ?? 0);
      return bytes / ids.length;
    },
    async stop() {
      await worker.stop();
      await queue.close();
      connection.disconnect();
    },
  };
}

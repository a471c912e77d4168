/**
 * The raw reference: a plain BullMQ worker (the project's own bullmq and ioredis), in a process of its
 * own like an agentq worker, whose jobs do nothing, or sleep `--sleep` ms. IPC: `{ expect: n }` makes
 * it send `{ done: true }` once n more jobs completed; a job whose data has `sentAt` (ms since the
 * epoch) sends `{ lag }`, the time from before `add` to its processor.
 */
import { parseArgs } from 'node:util';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const { values } = parseArgs({
  options: {
    queue: { type: 'string' },
    prefix: { type: 'string' },
    concurrency: { type: 'string', default: '50' },
    sleep: { type: 'string', default: '0' },
  },
});
const sleepMs = Number(values.sleep);
const connection = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: null });
let completed = 0;
let target = Infinity;
const worker = new Worker(
  values.queue,
  async (job) => {
    if (job.data.sentAt) process.send({ lag: performance.timeOrigin + performance.now() - job.data.sentAt });
    if (sleepMs) await new Promise((resolve) => setTimeout(resolve, sleepMs));
    return job.data.answer ?? 'done';
  },
  { connection, prefix: values.prefix, concurrency: Number(values.concurrency) },
);
worker.on('completed', () => {
  if (++completed >= target) {
    target = Infinity;
    process.send({ done: true });
  }
});
process.on('message', (message) => {
  if (message?.expect !== undefined) {
    completed = 0;
    target = message.expect;
    process.send({ expecting: true });
  }
});
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
process.on('disconnect', () => process.exit(0));
await worker.waitUntilReady();
process.send({ ready: true });

/**
 * The raw reference: a plain BullMQ worker (the project's own bullmq and ioredis), in a process of its
 * own like an agentq worker, whose jobs do nothing, or sleep `--sleep` ms, or (`--model`, a base URL)
 * make one model call through the openai SDK, with agentq's keep-alive fetch, and answer its text: the
 * least a step through the SDK can cost a BullMQ worker; a job whose data has `steps` makes that many,
 * each with the tool results so far, as B10's bare client does. IPC: `{ expect: n }` makes it send
 * `{ done: true }` once n more jobs completed; a job whose data has `sentAt` (ms since the epoch) sends
 * `{ lag }`, the time from before `add` to its processor, and one with `addedAt` sends `{ took }`, the
 * time from before `add` to its completion.
 */
import { parseArgs } from 'node:util';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { keepAliveFetch } from '../../packages/llm/dist/keep-alive-fetch.js';

const { values } = parseArgs({
  options: {
    queue: { type: 'string' },
    prefix: { type: 'string' },
    concurrency: { type: 'string', default: '50' },
    sleep: { type: 'string', default: '0' },
    model: { type: 'string' },
  },
});
const sleepMs = Number(values.sleep);
const model = values.model && new OpenAI({ baseURL: values.model, apiKey: 'not-needed', fetch: keepAliveFetch });
const connection = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: null });
let completed = 0;
let target = Infinity;
const worker = new Worker(
  values.queue,
  async (job) => {
    if (job.data.sentAt) process.send({ lag: performance.timeOrigin + performance.now() - job.data.sentAt });
    if (sleepMs) await new Promise((resolve) => setTimeout(resolve, sleepMs));
    if (model) {
      const messages = [{ role: 'user', content: job.data.prompt ?? `single ${job.id}` }];
      for (let step = 0; ; step++) {
        const completion = await model.chat.completions.create({ model: 'bench', messages });
        if (step + 1 >= (job.data.steps ?? 1)) return completion.choices[0].message.content;
        messages.push(
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: `c${step}`, type: 'function', function: { name: 'write_file', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: `c${step}`, content: 'ok' },
        );
      }
    }
    return job.data.answer ?? 'done';
  },
  { connection, prefix: values.prefix, concurrency: Number(values.concurrency) },
);
worker.on('completed', (job) => {
  if (job.data.addedAt) process.send({ took: performance.timeOrigin + performance.now() - job.data.addedAt });
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

/**
 * B8: what Redis holds for a 3-step task once it ended (write a file, run bash, answer) and its events
 * were compacted: its record, memory, events and job, and its share of the indexes; against a raw BullMQ job kept completed with
 * the same prompt as data and the same answer as return value.
 */
import { startAgentq, until } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { RAW_JOB_OPTIONS, startRawBullmq } from '../lib/raw-bullmq.mjs';

const ANSWER = 'The file has 22 bytes.';

export async function measureBytesPerTask({ redis, quick }) {
  const count = quick ? 40 : 100;
  const model = await startModel({ script: 'three-step' });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'b8',
    pools: 'coder',
    concurrency: 20,
  });
  const raw = await startRawBullmq({ redisUrl: redis.url, prefix: 'b8-raw', concurrency: 20 });
  try {
    const prompts = Array.from({ length: count }, (_, index) => `Write a file and tell me its size (${index})`);
    const ids = await agentq.submit(prompts.map((prompt) => ({ prompt, agent: 'coder' })));
    await until(async () => (await agentq.ended(redis.client)).ended, count, 50);
    // Once ended, each task's events are compacted by the worker in the background.
    await until(async () => -(await redis.client.zcard('b8:tasks:to-compact')), 0, 50);
    const { completed } = await agentq.ended(redis.client);
    await raw.run(count, (index) => ({ prompt: prompts[index], answer: ANSWER }), {
      ...RAW_JOB_OPTIONS,
      removeOnComplete: false,
    });
    return {
      count,
      completed,
      agentq: { bytes: await agentqBytes(redis.client, 'b8', ids) },
      raw: { bytes: await raw.bytesPerJob(redis.client) },
    };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), model.stop()]);
  }
}

/** Every key of each task (and its BullMQ job, if kept), plus its share of the shared sets. */
async function agentqBytes(redis, prefix, ids) {
  const usage = async (key) => Number((await redis.memory('USAGE', key, 'SAMPLES', '0')) ?? 0);
  const scan = async (pattern) => {
    const keys = [];
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
    return keys;
  };
  let bytes = 0;
  for (const id of ids) {
    for (const key of await scan(`${prefix}:task:${id}*`)) bytes += await usage(key);
    bytes += await usage(`${prefix}:bull:coder:${id}`);
  }
  // The task lists and the expiry schedule grow with every task.
  for (const key of [...(await scan(`${prefix}:tasks*`)), ...(await scan(`${prefix}:tenant:*:tasks*`))])
    bytes += await usage(key);
  return bytes / ids.length;
}

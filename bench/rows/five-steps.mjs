/**
 * B10: 5-step tasks (four write_file calls, then the answer) with a 200 ms model on one worker of
 * concurrency 50, one at a time and in waves of 50 (so no task waits for a slot): each task's time from its submit to its end
 * (the record's createdAt and finishedAt). Against the ideal, its five model calls' 1,000 ms, and what
 * a bare client (node:http, kept-alive, 50 at a time) takes for the same five streamed calls to the same
 * double in the same run, alternating: the double's own time under that load is not agentq's. What is
 * past the bare client is agentq's: queueing, claims, commits, the tool runs, the SDK's parsing. And, as
 * the floor, raw BullMQ jobs on one worker of the same concurrency, each making the same five calls
 * through the openai SDK (raw-worker.mjs) and nothing else: from before their `add` to their end.
 */
import { post, startAgentq, until } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { startRawBullmq } from '../lib/raw-bullmq.mjs';
import { alternate, percentile } from '../lib/stats.mjs';

const MODEL_MS = 200;
const STEPS = 5;
export async function measureFiveSteps({ redis, quick }) {
  return {
    alone: await measure({ redis, wave: 1, waves: quick ? 6 : 12 }),
    fifty: await measure({ redis, wave: 50, waves: quick ? 2 : 4 }),
  };
}

async function measure({ redis, wave: WAVE, waves }) {
  const model = await startModel({ latencyMs: MODEL_MS, script: 'five-step' });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: `b10-${WAVE}`,
    pools: 'file',
    concurrency: WAVE,
  });
  const raw = await startRawBullmq({
    redisUrl: redis.url,
    prefix: `b10-raw-${WAVE}`,
    concurrency: WAVE,
    modelURL: model.baseURL,
  });
  const floor = (index) => raw.took(WAVE, (task) => ({ prompt: `raw ${index} ${task}`, steps: STEPS }));
  const wave = async (index) => {
    const before = (await agentq.ended(redis.client)).ended;
    const ids = await agentq.submit(
      Array.from({ length: WAVE }, (_, task) => ({ prompt: `five steps ${index} ${task}`, agent: 'file' })),
    );
    await until(async () => (await agentq.ended(redis.client)).ended, before + WAVE, 20);
    const pipeline = redis.client.pipeline();
    for (const id of ids) pipeline.hmget(`b10-${WAVE}:task:${id}`, 'createdAt', 'finishedAt', 'status');
    return (await pipeline.exec()).map(([, [created, finished, status]]) => {
      if (status !== 'completed') throw new Error(`B10: a task ended ${status}`);
      return Date.parse(finished) - Date.parse(created);
    });
  };
  // The same five calls as a task makes them, each with the tool results so far (the double answers by them).
  const bare = async (index) => {
    const one = async (task) => {
      const started = performance.now();
      const messages = [{ role: 'user', content: `bare ${index} ${task}` }];
      for (let step = 0; step < STEPS; step++) {
        const { status } = await post(
          `${model.baseURL}/chat/completions`,
          JSON.stringify({ model: 'bench', stream: true, messages }),
        );
        if (status !== 200) throw new Error(`B10: the bare client got ${status}`);
        messages.push(
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: `c${step}`, type: 'function', function: { name: 'write_file', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: `c${step}`, content: 'ok' },
        );
      }
      return performance.now() - started;
    };
    return Promise.all(Array.from({ length: WAVE }, (_, task) => one(task)));
  };
  try {
    await wave('warm-up');
    await bare('warm-up');
    await floor('warm-up');
    const samples = await alternate({ agentq: wave, bare, floor }, waves);
    const of = (list) => ({ p50: percentile(list, 50), p99: percentile(list, 99) });
    return {
      count: samples.agentq.length,
      ideal: MODEL_MS * STEPS,
      agentq: of(samples.agentq),
      bare: of(samples.bare),
      floor: of(samples.floor),
    };
  } finally {
    await Promise.all([agentq.stop(), raw.stop(), model.stop()]);
  }
}

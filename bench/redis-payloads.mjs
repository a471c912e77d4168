/**
 * What long text costs Redis, counted (callgrind, lib/counted-redis.mjs): the instructions a task's
 * create, its claim and its completion run, with a short prompt and result and with 10 KB ones. Every byte a
 * script handles costs Redis instructions (docs/storage.md, "What a script costs Redis"); this shows
 * how many per byte of a prompt and of a result.
 *
 *   node bench/redis-payloads.mjs
 */
import { createKeys, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { startCountedRedis } from './lib/counted-redis.mjs';

const COUNT = 300;
const LONG = 10_000;

const redis = await startCountedRedis();
try {
  const store = new TaskStore(redis.client, createKeys('payloads'));
  const transitions = new Transitions(store);
  let batch = 0;
  const measure = async (promptBytes, resultBytes) => {
    batch++;
    const inputs = Array.from({ length: COUNT }, (_, index) => ({
      prompt: `${batch} ${index} ${'p'.repeat(promptBytes)}`,
      agent: 'casual',
    }));
    let created;
    const create = await redis.count(async () => (created = await transitions.submit(inputs, { tenant: 'default' })));
    const tasks = await Promise.all(created.map((task) => store.getRecord(task.id)));
    const by = { runToken: `run ${batch}`, agent: 'casual', worker: 'bench' };
    const claim = await redis.count(() => Promise.all(tasks.map((task) => transitions.claim(task, by))));
    const complete = await redis.count(() =>
      Promise.all(
        tasks.map((task, index) =>
          transitions.complete(task, { ...by, result: `${index} ${'r'.repeat(resultBytes)}`, steps: 1 }),
        ),
      ),
    );
    return { create: create / COUNT, claim: claim / COUNT, complete: complete / COUNT };
  };
  await measure(0, 0);
  const short = await measure(0, 0);
  const long = await measure(LONG, LONG);
  const k = (value) => `${Math.round(value / 1000).toLocaleString('en-US')}K`;
  console.log(`Redis instructions per task (callgrind, ${COUNT} tasks each):`);
  console.log(
    `  create:   ${k(short.create)} with a short prompt, ${k(long.create)} with a 10 KB one (${((long.create - short.create) / LONG).toFixed(0)} a byte)`,
  );
  console.log(
    `  claim:    ${k(short.claim)} with a short prompt, ${k(long.claim)} with a 10 KB one (${((long.claim - short.claim) / LONG).toFixed(0)} a byte)`,
  );
  console.log(
    `  complete: ${k(short.complete)} with a short result, ${k(long.complete)} with a 10 KB one (${((long.complete - short.complete) / LONG).toFixed(0)} a byte)`,
  );
} finally {
  await redis.stop();
}
process.exit(0);

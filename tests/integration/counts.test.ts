/** Counts that must not lie: failed tasks as failed jobs, and a cancelled plan's progress. */
import type { TaskView } from '@agentq/contract';
import { afterEach, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { closeQueues, createAgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys } from '@agentq/store';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

interface Pools {
  pools: Array<{
    name: string;
    counts: { failed: number; completed: number };
    jobsPerMinute: number;
    throughput: number[];
  }>;
}

it('a failed agent task is a failed job, a completed one a completed job, and both count this minute', async () => {
  stack = await startStack({
    pools: ['casual'],
    rules: [
      {
        match: (request: DoubleRequest) => JSON.stringify(request.messages).includes('please fail'),
        reply: { error: { status: 400, message: 'this prompt is refused' } },
      },
      { reply: { content: 'fine' } },
    ],
  });
  const [failing, passing] = await stack.submit([
    { prompt: 'please fail', agent: 'casual' },
    { prompt: 'please pass', agent: 'casual' },
  ]);
  await Promise.all([waitForEnd(stack.api.url, failing!), waitForEnd(stack.api.url, passing!)]);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${failing}`)).body.status).toBe('failed');

  const redis = connectRedis({ url: stack.config.REDIS_URL });
  const queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys: createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
  });
  try {
    await expect
      .poll(async () => (await queues.of(failing!).queue('casual').getJob(failing!))?.getState(), { timeout: 5_000 })
      .toBe('failed');
    // A completed job is removed at once: the task record holds the outcome.
    await expect
      .poll(async () => queues.of(passing!).queue('casual').getJob(passing!), { timeout: 5_000 })
      .toBeUndefined();
  } finally {
    await closeQueues(queues);
    redis.disconnect();
  }
  // Each worker adds what it counted once a second (finished-jobs.ts), to the minute it counted it in:
  // the two may fall either side of a minute's turn.
  const casual = async () =>
    (await getJson<Pools>(`${stack!.api.url}/v1/pools`)).body.pools.find((pool) => pool.name === 'casual')!;
  const lastTwoMinutes = async () => (await casual()).throughput.slice(-2).reduce((sum, count) => sum + count, 0);
  await expect.poll(lastTwoMinutes, { timeout: 5_000 }).toBe(2);
  const pool = await casual();
  expect(pool.jobsPerMinute).toBe(pool.throughput.at(-1));
  expect(pool.counts).toMatchObject({ failed: 1, completed: 1 });
});

it('a cancelled planned task reports its subtasks ended, not done', async () => {
  const isPlanner = (request: DoubleRequest) =>
    String(request.messages[0]?.content ?? '').startsWith('You are the planner');
  stack = await startStack({
    pools: ['planner', 'casual'],
    rules: [
      {
        match: isPlanner,
        reply: {
          content:
            '```json\n{"plan":[{"id":"1","agent":"casual","task":"slow one","need":[]},{"id":"2","agent":"casual","task":"after it","need":["1"]}]}\n```',
        },
      },
      { reply: { content: 'too late', delayMs: 30_000 } },
    ],
  });
  const [rootId] = await stack.submit([{ prompt: 'a plan to cancel' }]);
  await expect.poll(() => stack!.double.requests.length, { timeout: 10_000 }).toBe(2);
  await fetch(`${stack.api.url}/v1/tasks/${rootId}/cancel`, { method: 'POST' });
  await waitForEnd(stack.api.url, rootId!);
  const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
  expect(root.status).toBe('cancelled');
  expect(root.progress).toEqual({ done: 0, ended: 2, total: 2 });
});

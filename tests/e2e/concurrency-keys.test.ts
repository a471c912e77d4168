/**
 * Concurrency keys through the real API and four real worker processes: 20 tasks with one key and a
 * limit of 1 never run at once (measured from their own events), and start in submit order, while 20
 * with distinct keys do run at once. The tasks that wait for their key hold no worker slot: the pool's
 * active jobs never pass the key's limit.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type TaskEvent } from '@agentq/client';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

let fleet: Fleet;
let client: ReturnType<typeof createClient>;

beforeAll(async () => {
  fleet = await startFleet({
    name: 'concurrency-keys',
    model: 'keys-model',
    workers: 4,
    pools: 'casual',
    env: { AGENTQ_CONCURRENCY: '5' },
    rules: [{ reply: { content: 'done', delayMs: 150 } }],
  });
  client = createClient({ baseUrl: fleet.baseUrl });
}, 60_000);

afterAll(() => fleet?.stop());

/** When each task ran, from its events: its first start to its end. */
async function runTimes(ids: string[]): Promise<Array<{ id: string; start: number; end: number }>> {
  return Promise.all(
    ids.map(async (id) => {
      const events = (await waitForEnd(fleet.baseUrl, id)).map((message) => message.data as TaskEvent);
      const started = events.find((event) => event.type === 'task.started')!;
      const ended = events.find((event) => event.type === 'task.completed')!;
      return { id, start: Date.parse(started.ts), end: Date.parse(ended.ts) };
    }),
  );
}

/** The most tasks running at one moment. */
function mostAtOnce(times: ReadonlyArray<{ start: number; end: number }>): number {
  const edges = times.flatMap((time) => [
    { at: time.start, change: 1 },
    { at: time.end, change: -1 },
  ]);
  // An end at the same millisecond as a start comes first: the next began as the last ended.
  edges.sort((a, b) => a.at - b.at || a.change - b.change);
  let running = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (running += edge.change));
  return most;
}

/** Samples the pool's active jobs until `done` settles; answers the most seen. */
async function mostActive(done: Promise<unknown>): Promise<number> {
  let settled = false;
  void done.finally(() => (settled = true));
  let most = 0;
  while (!settled) {
    const { pools } = await client.request<{ pools: Array<{ name: string; counts: { active: number } }> }>(
      'GET',
      '/v1/pools',
    );
    most = Math.max(most, pools.find((pool) => pool.name === 'casual')!.counts.active);
  }
  return most;
}

it('runs 20 tasks with one key one at a time, in submit order, on 4 workers', async () => {
  const ids = await client.submit(
    Array.from({ length: 20 }, (_, index) => ({
      prompt: `one key ${index}`,
      agent: 'casual',
      concurrencyKey: 'user-1',
    })),
  );
  const waiting = await client.get(ids[19]!);
  expect(waiting.concurrency).toEqual({ key: 'user-1', limit: 1 });
  const times = runTimes(ids);
  const active = await mostActive(times);
  const ran = await times;
  expect(mostAtOnce(ran)).toBe(1);
  // Each started once the one before it ended, in the order they were submitted.
  for (let index = 1; index < ran.length; index++)
    expect(ran[index]!.start).toBeGreaterThanOrEqual(ran[index - 1]!.end);
  // Those waiting for the key held no worker slot: the pool's active jobs were the key's one run and, for a
  // moment, the job of the one that just ended (its task's end lets the next through before the job returns).
  expect(active).toBeLessThanOrEqual(2);
  console.log(`one key, limit 1: most running at once ${mostAtOnce(ran)}, most active jobs ${active}`);
});

it('runs 20 tasks with distinct keys at once', async () => {
  const ids = await client.submit(
    Array.from({ length: 20 }, (_, index) => ({
      prompt: `own key ${index}`,
      agent: 'casual',
      concurrencyKey: `user-${index}`,
    })),
  );
  const ran = await runTimes(ids);
  expect(mostAtOnce(ran)).toBeGreaterThan(4);
  console.log(`distinct keys: most running at once ${mostAtOnce(ran)}`);
});

/**
 * Concurrency keys through the real API and four real worker processes: 20 tasks with one key and a
 * limit of 1 never run at once (measured from their own events), and start in submit order, while 20
 * with distinct keys do run at once. The tasks that wait for their key hold no worker slot: the pool's
 * active jobs never pass the key's limit. A worker killed while it runs a keyed task: the task resumes
 * on another once its job's lock runs out, keeping its key, and the next one starts after it ends.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type TaskEvent } from '@agentq/client';
import { startOpenAIDouble } from '@agentq/llm';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';

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

it("keeps a killed worker's keyed task its key: it resumes elsewhere when its lock runs out, then the next starts", async () => {
  const prefix = freshPrefix('key-crash');
  // The first answer of the first task never comes (its worker is killed meanwhile); then every answer is quick.
  const double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => String(request.messages[1]?.content).startsWith('first'),
        reply: { content: 'late', delayMs: 60_000 },
        times: 1,
      },
      { reply: { content: 'done' } },
    ],
  });
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-key-crash-'));
  const processes: AgentqProcess[] = [];
  try {
    const env = await processEnv({
      prefix,
      dataDir,
      modelURL: double.baseURL,
      model: 'key-model',
      extra: { AGENTQ_JOB_LOCK_MS: '2000' },
    });
    const api = spawnAgentq(['api'], env);
    const doomed = spawnAgentq(['worker', '--pools', 'casual'], env);
    processes.push(api, doomed);
    const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
    await doomed.waitFor(/serving casual/);
    const keyed = createClient({ baseUrl });
    const [first, second] = await keyed.submit(
      ['first', 'second'].map((prompt) => ({ prompt, agent: 'casual', concurrencyKey: 'repo-1' })),
    );
    await waitForEvent(baseUrl, first!, 'llm.request');
    await doomed.stop('SIGKILL');
    const survivor = spawnAgentq(['worker', '--pools', 'casual'], env);
    processes.push(survivor);
    // The key is still the killed run's: the second waits for it, not for a worker.
    expect((await keyed.get(second!)).waitingFor).toEqual({ kind: 'concurrency', key: 'repo-1', limit: 1 });

    const events = async (id: string) => (await waitForEnd(baseUrl, id)).map((message) => message.data as TaskEvent);
    const [firstEvents, secondEvents] = await Promise.all([events(first!), events(second!)]);
    const starts = firstEvents.filter((event) => event.type === 'task.started');
    expect(starts).toHaveLength(2);
    expect(starts[1]!.type === 'task.started' && starts[1]!.data.resumed).toBe(true);
    const firstEnd = Date.parse(firstEvents.find((event) => event.type === 'task.completed')!.ts);
    const secondStart = Date.parse(secondEvents.find((event) => event.type === 'task.started')!.ts);
    expect(secondStart).toBeGreaterThanOrEqual(firstEnd);
    expect((await keyed.get(second!)).status).toBe('completed');
  } finally {
    await Promise.all(processes.map((process) => process.stop('SIGKILL')));
    await double.close();
    await deletePrefix(prefix);
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);

/**
 * Concurrency keys against the real API, a worker and Redis: a key belongs to its tenant (two tenants'
 * equal keys do not share), a tenant's limit per key holds and a submit may ask for less, a task waiting
 * for its key says so and can be cancelled, and a key whose holder ended without a turn of its gate (the
 * process that ended it died) lets the next task through at the worker's next sweep.
 */
import { afterEach, expect, it } from 'vitest';
import { createClient, type TaskEvent } from '@agentq/client';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { tenantsEnv } from '../helpers/config-file.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const clientOf = (key?: string) => createClient({ baseUrl: stack!.api.url, ...(key ? { apiKey: key } : {}) });

async function runTime(id: string, key?: string): Promise<{ start: number; end: number }> {
  const events = (await waitForEnd(stack!.api.url, id, key ? { authorization: `Bearer ${key}` } : {})).map(
    (message) => message.data as TaskEvent,
  );
  return {
    start: Date.parse(events.find((event) => event.type === 'task.started')!.ts),
    end: Date.parse(events.find((event) => event.type.startsWith('task.c'))!.ts),
  };
}

/** Whether two runs overlap. */
const overlap = (a: { start: number; end: number }, b: { start: number; end: number }) =>
  a.start < b.end && b.start < a.end;

it("keeps tenants' equal keys apart, and holds each tenant's limit per key", async () => {
  stack = await startStack({
    rules: [{ reply: { content: 'done', delayMs: 400 } }],
    pools: ['casual'],
    env: {
      AGENTQ_CONCURRENCY: '8',
      ...tenantsEnv({
        acme: { keys: ['acme-key'], limits: { perConcurrencyKey: 2 } },
        globex: { keys: ['globex-key'] },
      }),
    },
  });
  const acme = clientOf('acme-key');
  const globex = clientOf('globex-key');
  const [ours] = await acme.submit([{ prompt: 'a', agent: 'casual', concurrencyKey: 'shared', concurrencyLimit: 1 }]);
  const [theirs] = await globex.submit([{ prompt: 'b', agent: 'casual', concurrencyKey: 'shared' }]);
  expect(overlap(await runTime(ours!, 'acme-key'), await runTime(theirs!, 'globex-key'))).toBe(true);
  // Another tenant's key reaches nothing of it: not its view, not a decision on its calls.
  for (const [method, path, body] of [
    ['GET', `/v1/tasks/${ours}`, undefined],
    ['POST', `/v1/tasks/${ours}/approvals`, { callId: 'c1', approve: true }],
  ] as const) {
    const answer = await globex.request(method, path, body).catch((error: { status?: number }) => error);
    expect((answer as { status?: number }).status).toBe(404);
  }

  // acme's limit is 2: a submit asking for more is held to it, and 4 tasks run two at a time.
  const ids = await acme.submit(
    Array.from({ length: 4 }, (_, index) => ({
      prompt: `p${index}`,
      agent: 'casual',
      concurrencyKey: 'pair',
      concurrencyLimit: 5,
    })),
  );
  expect((await acme.get(ids[0]!)).concurrency).toEqual({ key: 'pair', limit: 2 });
  const times = await Promise.all(ids.map((id) => runTime(id, 'acme-key')));
  // Two at a time, never three: at each start, how many of the others run.
  const atOnce = times.map(
    (time) => times.filter((other) => other.start <= time.start && time.start < other.end).length,
  );
  expect(Math.max(...atOnce)).toBe(2);
});

it('says what a task waits for, can cancel it there, and lets the next through once the holder ends', async () => {
  stack = await startStack({ rules: [{ reply: { content: 'done', delayMs: 60_000 } }], pools: ['casual'] });
  const client = clientOf();
  const [holder, cancelled, next] = await client.submit(
    ['holds', 'cancelled while it waits', 'runs after'].map((prompt) => ({
      prompt,
      agent: 'casual',
      concurrencyKey: 'k',
    })),
  );
  await waitForEvent(stack.api.url, holder!, 'llm.request');
  expect((await client.get(next!)).waitingFor).toEqual({ kind: 'concurrency', key: 'k', limit: 1 });
  expect((await client.get(holder!)).waitingFor).toBeNull();
  await client.cancel(cancelled!);
  await waitForEnd(stack.api.url, cancelled!);
  expect((await client.get(next!)).status).toBe('queued');

  // The holder ends without a turn of its key's gate (as when the process that ended it died): the
  // worker's sweep lets the next one through.
  const store = new TaskStore(
    connectRedis({ url: stack.config.REDIS_URL }),
    createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
  );
  const record = (await store.getRecord(holder!))!;
  await new Transitions(store).cancel(record, { from: ['running'], reason: 'ended elsewhere' });
  store.redis.disconnect();
  await waitForEvent(stack.api.url, next!, 'llm.request');
  expect((await client.get(next!)).waitingFor).toBeNull();
  await client.cancel(next!);
});

/** Model endpoints' outages against a real Redis: one try at a time, waits that double, waiters woken, tenants apart. */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { createKeys, connectRedis } from '@agentq/store';
import { ModelOutages } from './model-outages.js';

const prefix = freshPrefix('outages');
let redis: Redis;
let outages: ModelOutages;
beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
  outages = new ModelOutages(redis, createKeys(prefix), { leaseMs: 60_000, maxBackoffMs: () => 4_000 });
});
afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

const call = (member: string, tenant = 'acme', model = 'm1') => ({ tenant, model, member });

it('lets calls go while nothing failed, then holds every other call while the failed one waits its turn', async () => {
  expect(await outages.enter(call('job-1'))).toEqual({ kind: 'go' });
  const first = await outages.failed(call('job-1'), 'Could not reach the LLM endpoint');
  // The first wait is about a second (less up to a quarter, as jitter).
  expect(first.until - first.now).toBeGreaterThanOrEqual(750);
  expect(first.until - first.now).toBeLessThanOrEqual(1_000);
  expect(first.since).toBe(first.now);
  const held = await outages.enter(call('job-2'));
  expect(held).toMatchObject({ kind: 'wait', since: first.since, lastError: 'Could not reach the LLM endpoint' });
  // It waits for the try's turn and its grace (10 s): a failed job that never comes back for its turn
  // (its task cancelled or removed meanwhile) leaves it to the first waiter back then.
  if (held.kind === 'wait') expect(held.until).toBe(first.until + 10_000);
  // The job that failed waits for its own turn.
  expect(await outages.enter(call('job-1'))).toMatchObject({ kind: 'wait', until: first.until });
});

it('doubles the wait after each failed try, up to the cap, and ends the outage at the first answer', async () => {
  const model = 'm2';
  const failures = [];
  failures.push(await outages.failed(call('prober', 'acme', model), 'down'));
  for (let index = 0; index < 4; index++) failures.push(await outages.failed(call('prober', 'acme', model), 'down'));
  const waits = failures.map((failure) => failure.until - failure.now);
  // 1 s, 2 s, 4 s, then the 4 s cap; each less up to a quarter.
  [1_000, 2_000, 4_000, 4_000, 4_000].forEach((full, index) => {
    expect(waits[index]).toBeGreaterThanOrEqual(full * 0.75);
    expect(waits[index]).toBeLessThanOrEqual(full);
  });
  // Every failure is of the one outage.
  expect(new Set(failures.map((failure) => failure.since)).size).toBe(1);
  await outages.enter(call('waiter-a', 'acme', model));
  await outages.enter(call('waiter-b', 'acme', model));
  expect((await outages.recovered({ tenant: 'acme', model })).sort()).toEqual(['waiter-a', 'waiter-b']);
  expect(await outages.enter(call('waiter-a', 'acme', model))).toEqual({ kind: 'go' });
  expect(await outages.recovered({ tenant: 'acme', model })).toEqual([]);
});

it("gives the try to one call once the wait is over, and another's only when that call's hold lapsed", async () => {
  const quick = new ModelOutages(redis, createKeys(prefix), { leaseMs: 300, maxBackoffMs: () => 1_000 });
  const model = 'm3';
  const failed = await quick.failed(call('first', 'acme', model), 'down');
  // Until its turn nobody tries; at its turn, only the job that failed does.
  await waitUntilRedisTime(failed.until);
  expect(await quick.enter(call('other', 'acme', model))).toMatchObject({ kind: 'wait' });
  expect(await quick.enter(call('first', 'acme', model))).toEqual({ kind: 'probe' });
  expect(await quick.enter(call('other', 'acme', model))).toMatchObject({ kind: 'wait' });
  // The try went nowhere (its worker died): past its lease another job takes over.
  await waitUntilRedisTime(failed.until + 700);
  expect(await quick.enter(call('other', 'acme', model))).toEqual({ kind: 'probe' });
  expect(await quick.enter(call('first', 'acme', model))).toMatchObject({ kind: 'wait' });
});

it("waits a 429's Retry-After instead of the backoff, and tells the waiters it is a rate limit", async () => {
  const model = 'm429';
  const limited = await outages.failed(call('limited', 'acme', model), 'answered 429', {
    rateLimited: true,
    waitMs: 20_000,
  });
  // The provider's word, past the 4 s cap, without jitter.
  expect(limited.until - limited.now).toBe(20_000);
  expect(await outages.enter(call('held', 'acme', model))).toMatchObject({
    kind: 'wait',
    rateLimited: true,
    lastError: 'answered 429',
  });
  // Another tenant's calls of that model go.
  expect(await outages.enter(call('held', 'other', model))).toEqual({ kind: 'go' });
  // Its next 429 without a Retry-After: the backoff (the second, 2 s).
  const again = await outages.failed(call('limited', 'acme', model), 'answered 429', { rateLimited: true });
  expect(again.until - again.now).toBeLessThanOrEqual(2_000);
  expect(again.until - again.now).toBeGreaterThanOrEqual(1_500);
  const unreachable = await outages.failed(call('down', 'acme', 'm429-down'), 'down');
  expect(await outages.enter(call('held', 'acme', 'm429-down'))).toMatchObject({ kind: 'wait', rateLimited: false });
  expect(unreachable.until).toBeGreaterThan(unreachable.now);
});

it('hands the next try to a waiter when the job that was to make it leaves', async () => {
  const model = 'm4';
  await outages.failed(call('leaver', 'acme', model), 'down');
  await outages.enter(call('stayer', 'acme', model));
  expect(await outages.left(call('leaver', 'acme', model))).toBe('stayer');
  // A waiter that leaves names nobody.
  expect(await outages.left(call('stayer', 'acme', model))).toBeUndefined();
});

it("keeps one tenant's outage from holding another tenant's calls of the same model", async () => {
  await outages.failed(call('hostile-job', 'hostile', 'shared'), 'answered 500');
  expect(await outages.enter(call('hostile-2', 'hostile', 'shared'))).toMatchObject({ kind: 'wait' });
  expect(await outages.enter(call('victim-job', 'victim', 'shared'))).toEqual({ kind: 'go' });
});

it('asks Redis before a call only where its process heard of an outage, or suspects one', async () => {
  const keys = createKeys(prefix);
  const subscriber = connectRedis({ url: redisUrl(), subscriber: true });
  try {
    const other = new ModelOutages(redis, keys, { leaseMs: 60_000, maxBackoffMs: () => 4_000 });
    const deaf = new ModelOutages(redis, keys, { leaseMs: 60_000, maxBackoffMs: () => 4_000 });
    await other.listen(subscriber);
    const heard = new Promise<void>((resolve) =>
      subscriber.on('message', (channel: string) => channel === keys.outagesChannel && resolve()),
    );
    await outages.failed(call('opener', 'acme', 'm5'), 'down');
    await heard;
    // Another worker heard of it: its calls wait. One that heard nothing lets its calls go (they fail,
    // and learn), until it suspects an outage (its task waited for one).
    expect(await other.enter(call('job-x', 'acme', 'm5'))).toMatchObject({ kind: 'wait' });
    expect(await deaf.enter(call('job-y', 'acme', 'm5'))).toEqual({ kind: 'go' });
    deaf.suspect({ tenant: 'acme', model: 'm5' });
    expect(await deaf.enter(call('job-y', 'acme', 'm5'))).toMatchObject({ kind: 'wait' });
    // Its end is heard too.
    const ended = new Promise<void>((resolve) =>
      subscriber.on(
        'message',
        (channel: string, text: string) =>
          channel === keys.outagesChannel && text.includes('"open":false') && resolve(),
      ),
    );
    expect((await outages.recovered({ tenant: 'acme', model: 'm5' })).sort()).toEqual(['job-x', 'job-y']);
    await ended;
    expect(await other.enter(call('job-x', 'acme', 'm5'))).toEqual({ kind: 'go' });
  } finally {
    subscriber.disconnect();
  }
});

/** Waits until Redis's clock passes `at` (ms), asking it. */
async function waitUntilRedisTime(at: number): Promise<void> {
  for (;;) {
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    if (now >= at) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, at - now)));
  }
}

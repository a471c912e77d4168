/**
 * The API and a worker build their store, queues and task service in one place (packages/tasks/src/
 * compose.ts) from one configuration. With settings none of which is a default, both hold the same,
 * the configuration's; and each ends tasks with the configured retention: the worker a task it ran,
 * the API a task it cancelled.
 */
import type { TaskView } from '@agentq/contract';
import type { Install } from '@agentq/tasks';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tenantsEnv } from '../helpers/config-file.js';
import { redisUrl } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

const HOUR = 3600 * 1000;
let stack: Stack;
let redis: Redis;

beforeAll(async () => {
  stack = await startStack({
    // A worker for `casual` only: a `coder` task stays queued until the API cancels it.
    pools: ['casual'],
    rules: [{ reply: { content: 'done' } }],
    env: {
      AGENTQ_RETENTION_HOURS: '5',
      AGENTQ_FAIR_BACKLOG: '13',
      AGENTQ_REDIS_FULL_PERCENT: '97',
      AGENTQ_TASK_DISK_MB: '9',
      ...tenantsEnv({ '*': { limits: { unfinished: 30, stored: 40, schedules: 6, perConcurrencyKey: 2 } } }),
    },
  });
  redis = new Redis(redisUrl());
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.close();
});

/** What an install holds that the configuration sets, with a tenant's limits. */
function held(install: Install) {
  const { settings } = install;
  return {
    prefix: settings.prefix,
    cellPrefixes: install.keys.cells.map((cell) => cell.cellPrefix),
    store: settings.store,
    storeRetentionMs: install.store.retentionMs,
    queues: settings.queues,
    queuedPools: install.queues.pools,
    redisFullPercent: settings.redisFullPercent,
    diskQuota: settings.diskQuota,
    room: settings.room('default'),
    concurrency: settings.concurrencyLimitOf('default'),
    schedules: settings.scheduleLimitOf('default'),
  };
}

it('gives the API and the worker the same store and queue options, the configuration’s', () => {
  const api = held(stack.api.install);
  expect(held(stack.worker!.install)).toEqual(api);
  expect(api).toMatchObject({
    store: { retentionMs: 5 * HOUR },
    storeRetentionMs: 5 * HOUR,
    queues: { fair: { backlog: 13 } },
    redisFullPercent: 97,
    diskQuota: { bytes: 9 * 1024 * 1024 },
    room: { unfinished: 30, stored: 40 },
    concurrency: 2,
    schedules: 6,
  });
});

it('ends tasks with the configured retention, in the worker and in the API', async () => {
  const [ran, cancelled] = await stack.submit([
    { prompt: 'run by the worker', agent: 'casual' },
    { prompt: 'cancelled by the API', agent: 'coder' },
  ]);
  // Queued with no worker of its pool: the API's own commit ends it.
  const cancel = await fetch(`${stack.api.url}/v1/tasks/${cancelled}/cancel`, { method: 'POST' });
  expect(await cancel.json()).toEqual({ id: cancelled, status: 'cancelled' });
  await waitForEnd(stack.api.url, ran!);
  const { keys } = stack.api.install;
  for (const id of [ran!, cancelled!]) {
    const view = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body;
    const expiresAt = Number(await redis.zscore(keys.cellOf(id).expiry, id));
    // Stamped by the commit that ended it, a moment after its finishedAt.
    expect(expiresAt - Date.parse(view.finishedAt!)).toBeGreaterThanOrEqual(5 * HOUR - 1_000);
    expect(expiresAt - Date.parse(view.finishedAt!)).toBeLessThan(5 * HOUR + 5_000);
  }
});

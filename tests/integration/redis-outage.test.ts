/**
 * Redis goes away and comes back (a SIGKILL, then a restart on its append-only file): the API says
 * so at once (503, never a hang), recovers by itself, and a client's retried submission with an
 * idempotency key creates nothing twice.
 */
import type { TaskView } from '@agentq/contract';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '@agentq/api';
import { loadConfig } from '@agentq/config';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { startWorker, type WorkerHandle } from '@agentq/worker';
import { freePort } from '../setup/redis-server.js';
import { waitForEnd } from '../helpers/sse.js';
import { killRedis, startDurableRedis } from '../helpers/durable-redis.js';

let dir: string;
let port: number;
let redis: ChildProcess | undefined;
let double: OpenAIDouble;
let api: ApiHandle;
let worker: WorkerHandle;

async function startRedis(): Promise<void> {
  redis = await startDurableRedis({ port, dir });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'agentq-outage-'));
  port = await freePort();
  await startRedis();
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
  const config = loadConfig({
    env: {
      PORT: '0',
      AGENTQ_LOG_LEVEL: 'silent',
      REDIS_URL: `redis://127.0.0.1:${port}`,
      AGENTQ_DATA_DIR: dir,
      OPENAI_BASE_URL: double.baseURL,
      AGENTQ_MODEL: 'm',
    },
  });
  api = await startApi({ config });
  worker = await startWorker({ config, pools: ['casual'], shutdownGraceMs: 200 });
});

afterAll(async () => {
  await worker?.close();
  await api?.close();
  await double?.close();
  redis?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

const submit = (tasks: unknown[]) =>
  fetch(`${api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks }),
  });
async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = Date.now();
  const value = await run();
  return { ms: Date.now() - started, value };
}

it('answers 503 at once while Redis is away, recovers by itself, and an idempotent retry creates nothing twice', async () => {
  const first = (await (
    await submit([{ prompt: 'before the outage', agent: 'casual', idempotencyKey: 'order-42' }])
  ).json()) as { tasks: Array<{ id: string }> };
  const id = first.tasks[0]!.id;
  await waitForEnd(api.url, id);

  await killRedis(redis!);
  const ready = await timed(() => fetch(`${api.url}/readyz`));
  expect(ready.value.status).toBe(503);
  expect(ready.ms).toBeLessThan(1_500);
  for (const call of [
    () => fetch(`${api.url}/v1/tasks/${id}`),
    () => fetch(`${api.url}/v1/tasks`),
    () => submit([{ prompt: 'during the outage', agent: 'casual', idempotencyKey: 'order-42' }]),
  ]) {
    const answer = await timed(call);
    expect(answer.value.status).toBe(503);
    expect(answer.ms).toBeLessThan(1_500);
    expect(((await answer.value.json()) as { error: { code: string } }).error.code).toBe('unavailable');
  }

  await startRedis();
  await expect
    .poll(async () => (await fetch(`${api.url}/readyz`)).status, { timeout: 15_000, interval: 200 })
    .toBe(200);
  expect(((await (await fetch(`${api.url}/v1/tasks/${id}`)).json()) as TaskView).status).toBe('completed');

  // The client retries the POST it never got an answer for: the same task, nothing new.
  const retried = await submit([{ prompt: 'before the outage', agent: 'casual', idempotencyKey: 'order-42' }]);
  expect(retried.status).toBe(202);
  expect(await retried.json()).toEqual({ tasks: [{ id, status: 'completed', existing: true }] });
  // A new key still creates, and the worker, back on Redis by itself, runs it.
  const fresh = (await (
    await submit([{ prompt: 'after the outage', agent: 'casual', idempotencyKey: 'order-43' }])
  ).json()) as { tasks: Array<{ id: string }> };
  expect(fresh.tasks[0]!.id).not.toBe(id);
  await waitForEnd(api.url, fresh.tasks[0]!.id);
  const listed = (await (await fetch(`${api.url}/v1/tasks`)).json()) as { tasks: TaskView[] };
  expect(listed.tasks.map((task) => task.id).sort()).toEqual([id, fresh.tasks[0]!.id].sort());
}, 60_000);

it('one idempotency key within a batch, or from two requests at once, creates one task', async () => {
  const [a, b] = await Promise.all([
    submit([{ prompt: 'twice at once', agent: 'casual', idempotencyKey: 'race-1' }]).then(
      (response) => response.json() as Promise<{ tasks: Array<{ id: string }> }>,
    ),
    submit([{ prompt: 'twice at once', agent: 'casual', idempotencyKey: 'race-1' }]).then(
      (response) => response.json() as Promise<{ tasks: Array<{ id: string }> }>,
    ),
  ]);
  expect(a.tasks[0]!.id).toBe(b.tasks[0]!.id);
  const batch = (await (
    await submit([
      { prompt: 'one', agent: 'casual', idempotencyKey: 'batch-1' },
      { prompt: 'one', agent: 'casual', idempotencyKey: 'batch-1' },
    ])
  ).json()) as { tasks: Array<{ id: string; existing?: boolean }> };
  expect(batch.tasks[1]).toMatchObject({ id: batch.tasks[0]!.id, existing: true });
});

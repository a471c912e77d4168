/**
 * Redis killed while tasks are in their tools, and restarted from its append-only file after their
 * locks have run out: every task ends, and no BullMQ job is left `active` ("Missing lock") for a task
 * that has ended.
 */
import { type DeliveryView, type TaskStatus, type TaskView, TERMINAL_STATUSES } from '@agentq/contract';
import { Webhook } from 'standardwebhooks';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '@agentq/api';
import { loadConfig, tenantSigningSecret } from '@agentq/config';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { closeQueues, createAgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys } from '@agentq/store';
import { startWorker, type WorkerHandle } from '@agentq/worker';
import { freePort } from '../setup/redis-server.js';
import { waitForEnd } from '../helpers/sse.js';
import { killRedis, startDurableRedis } from '../helpers/durable-redis.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

let dir: string;
let port: number;
let redis: ChildProcess | undefined;
let double: OpenAIDouble;
let api: ApiHandle;
let worker: WorkerHandle;
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

async function startRedis(): Promise<void> {
  redis = await startDurableRedis({ port, dir });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'agentq-restart-'));
  port = await freePort();
  await startRedis();
  const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 1.5; echo slept' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  const config = loadConfig({
    env: {
      PORT: '0',
      AGENTQ_LOG_LEVEL: 'silent',
      REDIS_URL: `redis://127.0.0.1:${port}`,
      AGENTQ_DATA_DIR: dir,
      OPENAI_BASE_URL: double.baseURL,
      AGENTQ_MODEL: 'm',
      AGENTQ_JOB_LOCK_MS: '3000',
      AGENTQ_CONCURRENCY: '10',
      AGENTQ_WEBHOOK_SECRET: SECRET,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTQ_WEBHOOK_RETRY_SCHEDULE: '2s',
    },
  });
  api = await startApi({ config });
  worker = await startWorker({ config, pools: ['coder'], shutdownGraceMs: 200 });
});

afterAll(async () => {
  await worker?.close();
  await api?.close();
  await double?.close();
  redis?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

it('ends every task and leaves no job active for an ended task after Redis restarts mid-tool', async () => {
  const response = await fetch(`${api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      tasks: Array.from({ length: 8 }, (_, index) => ({ prompt: `restart ${index}`, agent: 'coder' })),
    }),
  });
  const ids = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
  // Every task is in its tool when Redis dies.
  await expect.poll(() => double.requests.length, { timeout: 10_000 }).toBe(8);
  await killRedis(redis!);
  // Down for longer than a job's lock lasts (3/4 of AGENTQ_JOB_LOCK_MS): the locks are gone when it is back.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  await startRedis();
  await expect
    .poll(async () => (await fetch(`${api.url}/readyz`)).status, { timeout: 15_000, interval: 100 })
    .toBe(200);

  await Promise.all(ids.map((id) => waitForEnd(api.url, id)));
  const tasks = await Promise.all(
    ids.map(async (id) => (await (await fetch(`${api.url}/v1/tasks/${id}`)).json()) as TaskView),
  );
  expect(tasks.every((task) => TERMINAL_STATUSES.has(task.status as TaskStatus))).toBe(true);
  expect(tasks.filter((task) => task.status !== 'completed').map((task) => [task.status, task.error])).toEqual([]);

  const connection = connectRedis({ url: `redis://127.0.0.1:${port}` });
  const queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection,
    keys: createKeys('agentq'),
  });
  try {
    // Within a stalled check or two, nothing is active any more.
    await expect
      .poll(async () => (await queues.cells[0]!.queue('coder').getJobs(['active'])).map((job) => job.id), {
        timeout: 10_000,
        interval: 200,
      })
      .toEqual([]);
  } finally {
    await closeQueues(queues);
    connection.disconnect();
  }
}, 60_000);

it('sends a webhook whose first attempt failed once Redis is back from a restart, with the same id', async () => {
  const hook = await startWebhookReceiver([500, 200]);
  try {
    const response = await fetch(`${api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: 'hook', agent: 'coder', webhook: { url: hook.url } }] }),
    });
    const taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
    const deliveries = async () =>
      ((await (await fetch(`${api.url}/v1/tasks/${taskId}/deliveries`)).json()) as { deliveries: DeliveryView[] })
        .deliveries;
    await hook.receivedCount(1);
    await expect.poll(async () => (await deliveries())[0]?.attempts.length, { timeout: 10_000 }).toBe(1);
    // Down and back before the retry is due: what was written (the attempt, the next one due) is kept.
    await killRedis(redis!);
    await startRedis();
    const [first, second] = await hook.receivedCount(2, 20_000);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    new Webhook(tenantSigningSecret(SECRET, 'default')).verify(second!.body, second!.headers as Record<string, string>);
    await expect.poll(async () => (await deliveries())[0]?.state, { timeout: 10_000 }).toBe('delivered');
  } finally {
    await hook.close();
  }
}, 60_000);

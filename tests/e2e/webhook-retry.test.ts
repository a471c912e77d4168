/**
 * A webhook delivery outlives the worker that began it: the receiver answers 500 twice, the worker that
 * made the first attempt is killed, and another worker process retries on the schedule with the same
 * `webhook-id` until a 2xx, each attempt signed (checked with the Standard Webhooks library).
 */
import type { DeliveryView, TaskView, WebhookPayload } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const running: AgentqProcess[] = [];
const prefix = freshPrefix('webhook');
let double: OpenAIDouble | undefined;
let hook: WebhookReceiver | undefined;
let dataDir: string | undefined;

afterEach(async () => {
  await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')));
  await double?.close();
  await hook?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('retries after two 500s across a killed worker, with the same id and a valid signature', async () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'the answer' } }] });
  hook = await startWebhookReceiver([500, 500, 200]);
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-webhook-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'webhook-model',
    extra: {
      AGENTQ_WEBHOOK_SECRET: secret,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      // Room between the first attempt and the second to kill its worker.
      AGENTQ_WEBHOOK_RETRY_SCHEDULE: '3s,1s,1s',
    },
  });
  const api = spawnAgentq(['api'], env);
  const first = spawnAgentq(['worker', '--pools', 'casual'], env);
  running.push(api, first);
  const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await first.waitFor(/serving casual/);
  const submitted = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'tell me', agent: 'casual', webhook: { url: hook.url } }] }),
  });
  const taskId = ((await submitted.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
  const deliveries = async () =>
    ((await (await fetch(`${baseUrl}/v1/tasks/${taskId}/deliveries`)).json()) as { deliveries: DeliveryView[] })
      .deliveries;

  // The first attempt's 500 is written down; its worker dies before the next is due.
  await hook.receivedCount(1);
  await expect.poll(async () => (await deliveries())[0]?.attempts.length, { timeout: 10_000 }).toBe(1);
  await first.stop('SIGKILL');
  expect(hook.received).toHaveLength(1);

  const second = spawnAgentq(['worker', '--pools', 'casual'], env);
  running.push(second);
  const requests = await hook.receivedCount(3, 30_000);
  const ids = requests.map((request) => request.headers['webhook-id']);
  expect(new Set(ids).size).toBe(1);
  // The key its receiver is given (the tenant's, derived from the install's secret).
  const { secret: key } = (await (await fetch(`${baseUrl}/v1/webhooks/secret`)).json()) as { secret: string };
  for (const request of requests) {
    const payload = new Webhook(key).verify(
      request.body,
      request.headers as Record<string, string>,
    ) as WebhookPayload<TaskView>;
    expect(payload).toMatchObject({
      type: 'task.completed',
      data: { id: taskId, status: 'completed', result: 'the answer' },
    });
  }
  await expect.poll(async () => (await deliveries())[0]?.state, { timeout: 10_000 }).toBe('delivered');
  expect((await deliveries())[0]!.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 500, 200]);
  expect(hook.received).toHaveLength(3);
});

/**
 * Webhooks attacked by tenants over HTTP, through a real API and a real worker process on a Redis of
 * their own, with the wire double as the model: a tenant whose receiver never answers must not delay
 * another tenant's deliveries; a tenant on the install's secret must not be able to forge another's
 * deliveries; a webhook URL that does not parse is a 400 naming its field, never a 500.
 */
import type { DeliveryView, TaskView, UsageView, WebhookPayload } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const INSTALL_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const KEYS = { slow: 'slow-key', fast: 'fast-key', acme: 'acme-key', rival: 'rival-key' };
/** How long one attempt may take here (AGENTQ_WEBHOOK_TIMEOUT): the default 15 s, shortened. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/** A slow tenant's deliveries: hundreds, as the issue's ~450. */
const SLOW_DELIVERIES = 450;

const prefixes: string[] = [];
let dataDir: string;
let double: OpenAIDouble;
const started: AgentqProcess[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-webhook-attacks-'));
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
});

afterAll(async () => {
  await Promise.all(started.map((process) => process.stop('SIGKILL')));
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await double?.close();
  await Promise.all(prefixes.map((prefix) => deletePrefix(prefix)));
  await rm(dataDir, { recursive: true, force: true });
});

/** An API process (and a worker process of the casual pool when `worker`) on `extra`'s settings, on a prefix of their own. */
async function startAgentq(extra: Record<string, string>, worker: boolean): Promise<string> {
  const prefix = freshPrefix('webhook-attacks');
  prefixes.push(prefix);
  const env = await processEnv({ prefix, dataDir, modelURL: double.baseURL, model: 'hooks', extra });
  const api = spawnAgentq(['api'], env);
  started.push(api);
  const baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  if (worker) {
    const process = spawnAgentq(['worker', '--pools', 'casual'], env);
    started.push(process);
    await process.waitFor(/serving casual/);
  }
  return baseUrl;
}

async function receiver(options: { hang?: boolean } = {}): Promise<WebhookReceiver> {
  const hook = await startWebhookReceiver([200], [], options);
  receivers.push(hook);
  return hook;
}

async function call(baseUrl: string, method: string, route: string, key: string | undefined, body?: unknown) {
  const response = await fetch(`${baseUrl}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

async function submit(baseUrl: string, key: string, count: number, url: string): Promise<string[]> {
  const tasks = Array.from({ length: count }, (_, index) => ({
    prompt: `hi ${index}`,
    agent: 'casual',
    webhook: { url },
  }));
  const answer = await call(baseUrl, 'POST', '/v1/tasks', key, { tasks });
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return (answer.body.tasks as Array<{ id: string }>).map((task) => task.id);
}

function verify(request: ReceivedWebhook, secret: string): WebhookPayload<TaskView> {
  return new Webhook(secret).verify(
    request.body,
    request.headers as Record<string, string>,
  ) as WebhookPayload<TaskView>;
}

/** API and worker with the install's secret, four tenants on it, and receivers on loopback allowed. */
function startTenants(): Promise<string> {
  return startAgentq(
    {
      ...tenantsEnv({
        slow: { keys: [KEYS.slow] },
        fast: { keys: [KEYS.fast] },
        acme: { keys: [KEYS.acme] },
        rival: { keys: [KEYS.rival] },
      }),
      AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTQ_WEBHOOK_TIMEOUT: `${ATTEMPT_TIMEOUT_MS}ms`,
      // A slow tenant's failed attempts are not tried again while the test runs.
      AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h',
      AGENTQ_CONCURRENCY: '32',
    },
    true,
  );
}

describe('a tenant whose receiver never answers', () => {
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = await startTenants();
  }, 60_000);

  it("sends one tenant's delivery at once while hundreds of another's hang on a receiver that never answers", async () => {
    const slowHook = await receiver({ hang: true });
    const fastHook = await receiver();
    await submit(baseUrl, KEYS.slow, SLOW_DELIVERIES, slowHook.url);
    // Every slow delivery is made (due now, before the fast one) before the fast tenant's task runs.
    const unfinished = async () =>
      ((await call(baseUrl, 'GET', '/v1/usage', KEYS.slow)).body as unknown as UsageView).tasks.unfinished;
    await expect.poll(unfinished, { timeout: 60_000, interval: 200 }).toBe(0);
    await slowHook.receivedCount(1);

    const [fastTask] = await submit(baseUrl, KEYS.fast, 1, fastHook.url);
    const [request] = await fastHook.receivedCount(1, 20_000).catch(() => {
      throw new Error(
        `the fast tenant's delivery had not arrived 20 s after its task was submitted; the slow receiver had ${slowHook.received.length} requests, at most ${slowHook.open().most} open at once`,
      );
    });
    const { body } = await call(baseUrl, 'GET', `/v1/tasks/${fastTask}/deliveries`, KEYS.fast);
    const delivery = (body.deliveries as DeliveryView[])[0]!;
    const delayMs = request!.at - Date.parse(delivery.createdAt);
    console.log(
      `the fast tenant's delivery arrived ${delayMs} ms after it was made; the slow receiver had ${slowHook.received.length} of ${SLOW_DELIVERIES} requests, ${slowHook.open().now} open now, at most ${slowHook.open().most} at once`,
    );
    expect(delayMs).toBeLessThan(2_000);
    // The slow tenant's deliveries were still hanging then (hundreds not tried yet), holding its own
    // share of the sender (8 of 64), not all of it.
    expect(slowHook.received.length).toBeLessThan(SLOW_DELIVERIES - 100);
    expect(slowHook.open().most).toBe(8);
  }, 120_000);
});

describe('one delivery that never gets an answer', () => {
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = await startTenants();
  }, 60_000);

  it("holds up none of its own tenant's next deliveries: no batch waits for its slowest", async () => {
    const hangingHook = await receiver({ hang: true });
    const fastHook = await receiver();
    await submit(baseUrl, KEYS.fast, 1, hangingHook.url);
    await hangingHook.receivedCount(1);
    const [fastTask] = await submit(baseUrl, KEYS.fast, 1, fastHook.url);
    const [request] = await fastHook.receivedCount(1, 20_000);
    const { body } = await call(baseUrl, 'GET', `/v1/tasks/${fastTask}/deliveries`, KEYS.fast);
    const delayMs = request!.at - Date.parse((body.deliveries as DeliveryView[])[0]!.createdAt);
    console.log(`the next delivery arrived ${delayMs} ms after it was made, the first one still unanswered`);
    expect(delayMs).toBeLessThan(2_000);
    expect(hangingHook.open().now).toBe(1);
  }, 60_000);
});

describe('tenants on the install secret', () => {
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = await startTenants();
  }, 60_000);

  it("signs each tenant's deliveries with a key of its own, which another tenant's key does not verify", async () => {
    const acmeHook = await receiver();
    const rivalHook = await receiver();
    await submit(baseUrl, KEYS.acme, 1, acmeHook.url);
    await submit(baseUrl, KEYS.rival, 1, rivalHook.url);
    const [acmeDelivery] = await acmeHook.receivedCount(1);
    const [rivalDelivery] = await rivalHook.receivedCount(1);

    // The install's secret signs no tenant's delivery: a tenant that knew it could sign as any other.
    expect(() => verify(acmeDelivery!, INSTALL_SECRET), 'acme’s delivery verified with the install secret').toThrow();
    expect(() => verify(rivalDelivery!, INSTALL_SECRET), 'rival’s delivery verified with the install secret').toThrow();

    // Each tenant reads its own key (and only its own) to give its receiver.
    const acmeKey = await call(baseUrl, 'GET', '/v1/webhooks/secret', KEYS.acme);
    const rivalKey = await call(baseUrl, 'GET', '/v1/webhooks/secret', KEYS.rival);
    expect(acmeKey).toMatchObject({ status: 200, body: { tenant: 'acme', secret: expect.stringMatching(/^whsec_/) } });
    expect(rivalKey).toMatchObject({
      status: 200,
      body: { tenant: 'rival', secret: expect.stringMatching(/^whsec_/) },
    });
    expect((await call(baseUrl, 'GET', '/v1/webhooks/secret?tenant=acme', KEYS.rival)).status).toBe(403);
    const acmeSecret = acmeKey.body.secret as string;
    const rivalSecret = rivalKey.body.secret as string;

    expect(verify(acmeDelivery!, acmeSecret).data.tenant).toBe('acme');
    expect(verify(rivalDelivery!, rivalSecret).data.tenant).toBe('rival');
    expect(() => verify(acmeDelivery!, rivalSecret), 'acme’s delivery verified with rival’s key').toThrow();
    expect(() => verify(rivalDelivery!, acmeSecret), 'rival’s delivery verified with acme’s key').toThrow();
  }, 60_000);
});

describe('a webhook URL that does not parse, with the default settings (private targets refused)', () => {
  const BAD_URLS = ['not a url', 'http://', 'http://[::1'];
  let baseUrl: string;

  beforeAll(async () => {
    baseUrl = await startAgentq({ AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET }, false);
  }, 60_000);

  const fieldsOf = (body: Record<string, unknown>) =>
    ((body.error as { details?: Array<{ path: string }> }).details ?? []).map((detail) => detail.path);

  it('is a 400 naming the field on submit, schedule create and schedule patch', async () => {
    const schedule = await call(baseUrl, 'POST', '/v1/schedules', undefined, {
      every: 60_000,
      paused: true,
      task: { prompt: 'x', agent: 'casual' },
    });
    expect(schedule.status).toBe(201);
    for (const url of BAD_URLS) {
      const task = { prompt: 'x', agent: 'casual', webhook: { url } };
      const submitted = await call(baseUrl, 'POST', '/v1/tasks', undefined, { tasks: [task] });
      expect(submitted.status, `submit ${url}: ${JSON.stringify(submitted.body)}`).toBe(400);
      expect(fieldsOf(submitted.body)).toEqual(['tasks.0.webhook.url']);

      const created = await call(baseUrl, 'POST', '/v1/schedules', undefined, { every: 60_000, task });
      expect(created.status, `schedule create ${url}: ${JSON.stringify(created.body)}`).toBe(400);
      expect(fieldsOf(created.body)).toEqual(['task.webhook.url']);

      const patched = await call(baseUrl, 'PATCH', `/v1/schedules/${String(schedule.body.id)}`, undefined, { task });
      expect(patched.status, `schedule patch ${url}: ${JSON.stringify(patched.body)}`).toBe(400);
      expect(fieldsOf(patched.body)).toEqual(['task.webhook.url']);
    }
  });
});

/**
 * Webhooks attacked by tenants over HTTP, through a real API and a real worker process on a Redis of
 * their own, with the wire double as the model: a tenant on the install's secret must not be able to
 * forge another's deliveries; a webhook URL that does not parse is a 400 naming its field, never a 500.
 */
import type { TaskView, WebhookPayload } from '@agentq/contract';
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
const KEYS = { acme: 'acme-key', rival: 'rival-key' };

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

async function receiver(): Promise<WebhookReceiver> {
  const hook = await startWebhookReceiver();
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

/** API and worker with the install's secret, tenants on it, and receivers on loopback allowed. */
function startTenants(): Promise<string> {
  return startAgentq(
    {
      ...tenantsEnv({
        acme: { keys: [KEYS.acme] },
        rival: { keys: [KEYS.rival] },
      }),
      AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET,
      AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h',
    },
    true,
  );
}

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

/**
 * Webhooks attacked by tenants over HTTP, by an operator's file and by a hostile model, through a real
 * API and a real worker process on a Redis of their own, with the wire double as the model: a tenant
 * whose receiver never answers must not delay another tenant's deliveries; a tenant on the install's
 * secret must not be able to forge another's deliveries, nor a tenant whose own secret is another's key
 * written another way; a webhook URL that does not parse is a 400 naming its field, never a 500; no
 * webhook enters a task where it cannot be signed; a huge answer makes a bounded delivery and costs the
 * sender nothing per attempt in flight; a resend never runs beside an attempt under way.
 */
import type { DeliveryView, TaskView, UsageView, WebhookPayload } from '@agentq/contract';
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstUserText, startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
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

async function submit(baseUrl: string, key: string, count: number, url: string, prompt = 'hi'): Promise<string[]> {
  const tasks = Array.from({ length: count }, (_, index) => ({
    prompt: `${prompt} ${index}`,
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

describe("one signing key written another way, in the operator's file", () => {
  const bytes = randomBytes(32);
  const written = `whsec_${bytes.toString('base64')}`;
  // 32 bytes are 43 characters of base64 and a "=": the last character's two low bits are no key's.
  const lastBits = (secret: string) => {
    const [body, last] = [secret.slice(0, -2), secret.at(-2)!];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    return `${body}${alphabet[alphabet.indexOf(last) ^ 1]}=`;
  };
  const install = randomBytes(32);
  const installSecret = `whsec_${install.toString('base64')}`;
  const derivedForBeta = `whsec_${createHmac('sha256', install).update('agentq-webhook:beta').digest('base64')}`;
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    [
      "beta's is acme's with its padding dropped",
      { ACME_HOOK: written, BETA_HOOK: written.replace(/=+$/, '') },
      /tenants\.beta\.webhook\.secret: holds the key tenants\.acme\.webhook\.secret holds/,
    ],
    [
      "beta's is acme's with the bits no key has changed",
      { ACME_HOOK: written, BETA_HOOK: lastBits(written) },
      /tenants\.beta\.webhook\.secret: holds the key tenants\.acme\.webhook\.secret holds/,
    ],
    [
      "mallory's is the install's with its padding dropped",
      { AGENTQ_WEBHOOK_SECRET: installSecret, MALLORY_HOOK: installSecret.replace(/=+$/, '') },
      /tenants\.mallory\.webhook\.secret: holds the key AGENTQ_WEBHOOK_SECRET holds/,
    ],
    [
      "acme's is the key derived for beta",
      { AGENTQ_WEBHOOK_SECRET: installSecret, ACME_HOOK: derivedForBeta },
      /tenants\.acme\.webhook\.secret: holds the key derived for tenant beta/,
    ],
  ];
  for (const [name, variables, refusal] of cases)
    it(`is refused at start, naming the place and not the key: ${name}`, async () => {
      const hook = (variable: string) => (variables[variable] ? { webhook: { secret: { env: variable } } } : {});
      const env = await processEnv({
        prefix: freshPrefix('webhook-keys'),
        dataDir,
        modelURL: double.baseURL,
        model: 'hooks',
        extra: {
          ...variables,
          ...tenantsEnv({
            acme: { keys: ['acme-key'], ...hook('ACME_HOOK') },
            beta: { keys: ['beta-key'], ...hook('BETA_HOOK') },
            mallory: { keys: ['mallory-key'], ...hook('MALLORY_HOOK') },
          }),
        },
      });
      const api = spawnAgentq(['api'], env);
      started.push(api);
      const outcome = await Promise.race([
        api.exited.then((code) => `exited with ${code}`),
        api.waitFor(/listening on http/, 30_000).then(() => 'listening'),
      ]);
      await api.stop('SIGKILL');
      console.log(`${name}: ${outcome}; ${api.output().trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`);
      expect(outcome).toBe('exited with 2');
      expect(api.output()).toMatch(refusal);
      for (const secret of Object.values(variables)) expect(api.output()).not.toContain(secret.slice(6));
    });
});

describe('a webhook on an install that cannot sign', () => {
  it("is refused however it enters: a submit, a schedule's create and change, a retry, a bulk retry, a firing", async () => {
    const hook = await receiver();
    const prefix = freshPrefix('webhook-unsigned');
    prefixes.push(prefix);
    const tenants = tenantsEnv({ acme: { keys: [KEYS.acme] } });
    // API and worker on one prefix: started with the install's secret, then again without it.
    const start = async (extra: Record<string, string>) => {
      const env = await processEnv({
        prefix,
        dataDir,
        modelURL: double.baseURL,
        model: 'hooks',
        extra: { ...tenants, AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true', ...extra },
      });
      const processes = [spawnAgentq(['api'], env), spawnAgentq(['worker', '--pools', 'casual'], env)];
      started.push(...processes);
      const baseUrl = (await processes[0]!.waitFor(/listening on (http[^\s"]+)/))[1]!;
      await processes[1]!.waitFor(/serving casual/);
      return { baseUrl, stop: () => Promise.all(processes.map((process) => process.stop('SIGKILL'))) };
    };
    const withWebhook = (prompt: string, agent = 'casual') => ({ prompt, agent, webhook: { url: hook.url } });

    // While it can sign: a task with a webhook that ends cancelled (no worker runs its pool), and a
    // schedule whose task has one (paused: resumed once the secret is gone, it fires every second).
    const signing = await start({ AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET });
    const submitted = await call(signing.baseUrl, 'POST', '/v1/tasks', KEYS.acme, {
      tasks: [withWebhook('never runs', 'coder')],
    });
    const cancelledId = (submitted.body.tasks as Array<{ id: string }>)[0]!.id;
    expect((await call(signing.baseUrl, 'POST', `/v1/tasks/${cancelledId}/cancel`, KEYS.acme)).status).toBe(202);
    const firing = await call(signing.baseUrl, 'POST', '/v1/schedules', KEYS.acme, {
      every: 1_000,
      paused: true,
      task: withWebhook('tick'),
    });
    expect(firing.status).toBe(201);
    await signing.stop();

    // The operator takes the secret away.
    const unsigned = await start({});
    const restartedAt = Date.now();
    const plain = await call(unsigned.baseUrl, 'POST', '/v1/schedules', KEYS.acme, {
      every: 60_000,
      paused: true,
      task: { prompt: 'plain', agent: 'casual' },
    });
    expect(plain.status).toBe(201);
    const answers = {
      submit: await call(unsigned.baseUrl, 'POST', '/v1/tasks', KEYS.acme, { tasks: [withWebhook('x')] }),
      'schedule create': await call(unsigned.baseUrl, 'POST', '/v1/schedules', KEYS.acme, {
        every: 60_000,
        task: withWebhook('x'),
      }),
      'schedule change': await call(unsigned.baseUrl, 'PATCH', `/v1/schedules/${String(plain.body.id)}`, KEYS.acme, {
        task: withWebhook('x'),
      }),
      retry: await call(unsigned.baseUrl, 'POST', `/v1/tasks/${cancelledId}/retry`, KEYS.acme),
      'bulk retry': await call(unsigned.baseUrl, 'POST', '/v1/tasks/bulk', KEYS.acme, {
        action: 'retry',
        status: 'cancelled',
      }),
    };
    // The schedule made while it could sign is resumed (its task unchanged) and fires: what does its run do?
    const resumed = await call(unsigned.baseUrl, 'PATCH', `/v1/schedules/${String(firing.body.id)}`, KEYS.acme, {
      paused: false,
    });
    expect(resumed.status).toBe(200);
    const runAfterRestart = async () => {
      const schedule = await call(unsigned.baseUrl, 'GET', `/v1/schedules/${String(firing.body.id)}`, KEYS.acme);
      const runs = schedule.body.lastRuns as Array<{ at: string; taskId: string | null; skipped: string | null }>;
      return runs.find((entry) => Date.parse(entry.at) > restartedAt);
    };
    await expect.poll(runAfterRestart, { timeout: 20_000, interval: 200 }).toBeDefined();
    const run = (await runAfterRestart())!;
    await call(unsigned.baseUrl, 'PATCH', `/v1/schedules/${String(firing.body.id)}`, KEYS.acme, { paused: true });
    console.log(
      `${Object.entries(answers)
        .map(([way, answer]) => `${way}: ${answer.status}`)
        .join(', ')}; a firing: ${run.taskId ? `made task ${run.taskId}` : `skipped (${run.skipped})`}`,
    );
    for (const [way, answer] of Object.entries(answers)) {
      expect(answer.status, `${way}: ${JSON.stringify(answer.body)}`).toBe(400);
      expect(JSON.stringify(answer.body), way).toMatch(/cannot sign/);
    }
    expect(run.taskId).toBeNull();
    expect(run.skipped).toMatch(/cannot sign/);
  }, 120_000);

  it("refuses a tenant's default webhook URL at start when nothing can sign its deliveries", async () => {
    const env = await processEnv({
      prefix: freshPrefix('webhook-unsigned'),
      dataDir,
      modelURL: double.baseURL,
      model: 'hooks',
      extra: tenantsEnv({ acme: { keys: [KEYS.acme], webhook: { url: 'https://hooks.example.com/acme' } } }),
    });
    const api = spawnAgentq(['api'], env);
    started.push(api);
    const outcome = await Promise.race([
      api.exited.then((code) => `exited with ${code}`),
      api.waitFor(/listening on http/, 30_000).then(() => 'listening'),
    ]);
    await api.stop('SIGKILL');
    console.log(`a default webhook URL with no secret: ${outcome}`);
    expect(outcome).toBe('exited with 2');
    expect(api.output()).toMatch(/tenants\.acme\.webhook\.url: .*cannot be signed/);
  });
});

describe("a model's huge answer in a webhook", () => {
  /** What a hostile model answers: 16 MiB, a head and a tail that can be told apart. */
  const BIG = `HEAD${'r'.repeat(16 * 1024 * 1024)}TAIL`;
  const MIB = 1024 * 1024;
  let baseUrl: string;
  let env: Record<string, string>;
  /** The worker that runs the tasks (and sends their first attempts). */
  let firstWorker: AgentqProcess;
  beforeAll(async () => {
    double.setRules([
      { match: (request) => firstUserText(request).startsWith('big'), reply: { content: BIG } },
      { reply: { content: 'done' } },
    ]);
    const prefix = freshPrefix('webhook-big');
    prefixes.push(prefix);
    env = await processEnv({
      prefix,
      dataDir,
      modelURL: double.baseURL,
      model: 'hooks',
      extra: {
        ...tenantsEnv({ acme: { keys: [KEYS.acme] } }),
        AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET,
        AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
        AGENTQ_WEBHOOK_TIMEOUT: '60s',
        AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h',
      },
    });
    const api = spawnAgentq(['api'], env);
    started.push(api);
    baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
    firstWorker = spawnAgentq(['worker', '--pools', 'casual'], env);
    started.push(firstWorker);
    await firstWorker.waitFor(/serving casual/);
  }, 60_000);
  afterAll(() => double.setRules([{ reply: { content: 'done' } }]));

  it('sends a bounded body, signed over exactly its bytes, with the whole length and a flag', async () => {
    const hook = await receiver();
    await submit(baseUrl, KEYS.acme, 1, hook.url, 'big answer');
    const [request] = await hook.receivedCount(1, 60_000);
    const key = (await call(baseUrl, 'GET', '/v1/webhooks/secret', KEYS.acme)).body.secret as string;
    const payload = verify(request!, key) as WebhookPayload<TaskView & { resultBytes: number; truncated: boolean }>;
    const bytes = Buffer.byteLength(request!.body);
    console.log(
      `a ${(BIG.length / MIB).toFixed(1)} MiB answer: one delivery's body ${(bytes / 1024).toFixed(1)} KiB; result kept ${payload.data.result?.length} characters of ${payload.data.resultBytes} bytes, truncated ${payload.data.truncated}`,
    );
    expect(bytes).toBeLessThan(MIB);
    expect(payload.data).toMatchObject({ status: 'completed', resultBytes: BIG.length, truncated: true });
    expect(payload.data.result!.startsWith('HEAD')).toBe(true);
    expect(payload.data.result!.endsWith('TAIL')).toBe(true);
  }, 120_000);

  it('holds no whole answer per attempt in flight: eight to a receiver that reads and never answers', async () => {
    // The first eight attempts are answered 410 (failed at once); their resends hang, each body read whole.
    let requests = 0;
    const bodiesRead: number[] = [];
    const server = createServer((request, response) => {
      const gone = ++requests <= 8;
      request.resume();
      request.on('end', () => {
        if (!gone) bodiesRead.push(Date.now());
        else {
          response.statusCode = 410;
          response.end();
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const ids = await submit(baseUrl, KEYS.acme, 8, url, 'big answer');
      await expect.poll(() => requests, { timeout: 120_000, interval: 200 }).toBe(8);
      const deliveryIds = await Promise.all(
        ids.map(async (id) => {
          const listed = async () =>
            (
              (await call(baseUrl, 'GET', `/v1/tasks/${id}/deliveries`, KEYS.acme)).body.deliveries as DeliveryView[]
            )[0];
          await expect.poll(async () => (await listed())?.state, { timeout: 20_000, interval: 200 }).toBe('failed');
          return (await listed())!.id;
        }),
      );
      // A worker of its own sends the resends: nothing else it does takes memory.
      await firstWorker.stop('SIGKILL');
      const worker = spawnAgentq(['worker', '--pools', 'casual'], env);
      started.push(worker);
      await worker.waitFor(/serving casual/);
      const rss = () =>
        Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${worker.child.pid}/status`, 'utf8'))![1]) / 1024;
      const before = rss();
      let peak = before;
      const watch = setInterval(() => (peak = Math.max(peak, rss())), 50);
      for (const [index, id] of ids.entries())
        await call(baseUrl, 'POST', `/v1/tasks/${id}/deliveries/${deliveryIds[index]!}/resend`, KEYS.acme);
      await expect.poll(() => bodiesRead.length, { timeout: 60_000, interval: 100 }).toBe(8);
      peak = Math.max(peak, rss());
      clearInterval(watch);
      console.log(
        `a fresh worker sending 8 deliveries of ${(BIG.length / MIB).toFixed(0)} MiB answers to a receiver that reads them and never answers: RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MiB`,
      );
      expect(peak - before).toBeLessThan(32);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 240_000);
});

describe('a resend while an attempt is under way', () => {
  it('starts no second attempt (409), and every attempt made is recorded', async () => {
    const baseUrl = await startAgentq(
      {
        ...tenantsEnv({ acme: { keys: [KEYS.acme] } }),
        AGENTQ_WEBHOOK_SECRET: INSTALL_SECRET,
        AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
        AGENTQ_WEBHOOK_TIMEOUT: '3s',
        AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1h',
      },
      true,
    );
    const hook = await receiver({ hang: true });
    const [taskId] = await submit(baseUrl, KEYS.acme, 1, hook.url);
    await hook.receivedCount(1);
    const deliveries = async () =>
      (await call(baseUrl, 'GET', `/v1/tasks/${taskId!}/deliveries`, KEYS.acme)).body.deliveries as DeliveryView[];
    const deliveryId = (await deliveries())[0]!.id;
    const resend = () => call(baseUrl, 'POST', `/v1/tasks/${taskId!}/deliveries/${deliveryId}/resend`, KEYS.acme);
    // Five resends while the receiver holds the first attempt.
    const during = [];
    for (let index = 0; index < 5; index++) during.push(await resend());
    // Every attempt under way ends by its timeout: then the record is complete.
    await expect.poll(() => hook.open().now, { timeout: 20_000, interval: 100 }).toBe(0);
    await expect
      .poll(async () => (await deliveries())[0]!.attempts.length, { timeout: 10_000, interval: 100 })
      .toBeGreaterThan(0);
    await expect.poll(async () => (await deliveries())[0]!.state, { timeout: 10_000, interval: 100 }).toBe('pending');
    const listed = (await deliveries())[0]!;
    console.log(
      `1 attempt + 5 resends while its receiver hangs: resends answered ${during.map((answer) => answer.status).join(', ')}; the receiver got ${hook.received.length} POSTs, at most ${hook.open().most} at once; the delivery lists ${listed.attempts.length} attempts`,
    );
    expect(during.map((answer) => answer.status)).toEqual([409, 409, 409, 409, 409]);
    expect(JSON.stringify(during[0]!.body)).toMatch(/under way/);
    expect(hook.received).toHaveLength(1);
    expect(listed.attempts).toHaveLength(hook.received.length);
    // Once the attempt ended, a resend starts the next one, and it is recorded too.
    expect((await resend()).status).toBe(202);
    await hook.receivedCount(2);
    await expect.poll(() => hook.open().now, { timeout: 20_000, interval: 100 }).toBe(0);
    await expect.poll(async () => (await deliveries())[0]!.attempts.length, { timeout: 10_000, interval: 100 }).toBe(2);
  }, 90_000);
});

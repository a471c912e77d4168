/** Who may use the API: binding, keys, tenants on every route, admins and bull-board. */
import type { TaskView, UsageView } from '@agentq/contract';
import { createHash } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '@agentq/api';
import { ConfigError, loadConfig } from '@agentq/config';
import type { DoubleRequest } from '@agentq/llm';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { configFile, tenantsEnv, type TestTenant } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

/** The cells the install's tasks are in (AGENTQ_CELLS): the tenants' tests run with one, then with four. */
let cells = 1;

/** Two tenants' keys and an admin's, with limits for every tenant (`*`) and more for some. */
const withKeys = (limits: Record<string, number> = {}, more: Record<string, TestTenant> = {}) => ({
  ...tenantsEnv({
    acme: { keys: ['key-acme'], ...more.acme },
    globex: { keys: ['key-globex'] },
    default: { keys: ['key-admin'], admin: true },
    '*': { limits },
  }),
  AGENTQ_CELLS: String(cells),
});
const KEYS = withKeys();
const as = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    ...(init.headers as Record<string, string>),
  },
});

async function submitAs(key: string, tasks: unknown[]): Promise<string[]> {
  const response = await fetch(
    `${stack!.api.url}/v1/tasks`,
    as(key, { method: 'POST', body: JSON.stringify({ tasks }) }),
  );
  expect(response.status).toBe(202);
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

/** A public address of this machine, if it has one (the API must not answer there by default). */
function publicAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal)?.address;
}

describe('where the API listens', () => {
  const base = () => ({
    PORT: '0',
    AGENTQ_LOG_LEVEL: 'silent',
    REDIS_URL: redisUrl(),
    AGENTQ_REDIS_PREFIX: freshPrefix('bind'),
  });

  it('listens on loopback by default, and says where it really listens', async () => {
    const api = await startApi({ config: loadConfig({ env: base() }) });
    try {
      expect(api.listening).toBe(`127.0.0.1:${api.port}`);
      expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
      const outside = publicAddress();
      if (outside) await expect(fetch(`http://${outside}:${api.port}/healthz`)).rejects.toThrow();
    } finally {
      await api.close();
    }
  });

  it('refuses a public address without keys, unless told to open it', async () => {
    await expect(startApi({ config: loadConfig({ env: { ...base(), AGENTQ_HOST: '0.0.0.0' } }) })).rejects.toThrow(
      ConfigError,
    );
    await expect(startApi({ config: loadConfig({ env: { ...base(), AGENTQ_HOST: '0.0.0.0' } }) })).rejects.toThrow(
      /AGENTQ_HOST=0\.0\.0\.0 would let anyone who reaches this port run code .* Give tenants keys in the configuration file .* AGENTQ_ALLOW_NO_AUTH=1/,
    );
    for (const env of [tenantsEnv({ a: { keys: ['k1'] } }), { AGENTQ_ALLOW_NO_AUTH: '1' }]) {
      const api = await startApi({ config: loadConfig({ env: { ...base(), AGENTQ_HOST: '0.0.0.0', ...env } }) });
      expect(api.listening).toBe(`0.0.0.0:${api.port}`);
      expect(api.url).toBe(`http://127.0.0.1:${api.port}`);
      await api.close();
    }
  });

  it('without keys, answers only requests that name a loopback host (no DNS rebinding)', async () => {
    const prefix = freshPrefix('host');
    const api = await startApi({ config: loadConfig({ env: { ...base(), AGENTQ_REDIS_PREFIX: prefix } }) });
    try {
      const status = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const request = httpRequest(
            { host: '127.0.0.1', port: api.port, path: '/v1/tasks', headers: { host } },
            (response) => {
              response.resume();
              resolve(response.statusCode ?? 0);
            },
          );
          request.on('error', reject);
          request.end();
        });
      expect(await status(`localhost:${api.port}`)).toBe(200);
      expect(await status(`127.0.0.1:${api.port}`)).toBe(200);
      expect(await status(`[::1]:${api.port}`)).toBe(200);
      expect(await status('attacker.example:80')).toBe(403);
    } finally {
      await api.close();
      await deletePrefix(prefix);
    }
  });
});

describe('API keys', () => {
  it('takes a key the file names by its SHA-256, and holds each tenant to its own limits over `*`', async () => {
    const sha256 = createHash('sha256').update('key-by-hash').digest('hex');
    stack = await startStack({
      pools: [],
      env: {
        AGENTQ_CONFIG: configFile({
          tenants: {
            hashed: { keys: [{ sha256 }], limits: { unfinished: 1 } },
            roomy: { keys: [{ env: 'ROOMY_KEY' }] },
            '*': { limits: { unfinished: 2 } },
          },
        }),
        ROOMY_KEY: 'key-roomy',
      },
    });
    const submit = (key: string, count: number) =>
      fetch(`${stack!.api.url}/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          tasks: Array.from({ length: count }, (_, index) => ({ prompt: `p${index}`, agent: 'casual' })),
        }),
      });
    expect((await submit('key-by-hash', 1)).status).toBe(202);
    const refused = await submit('key-by-hash', 1);
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain('would pass its limit of 1 (tenants.hashed.limits.unfinished)');
    // The other tenant has `*`'s room, not the first one's.
    expect((await submit('key-roomy', 2)).status).toBe(202);
    expect((await submit('key-roomy', 1)).status).toBe(429);
    // Nor is the hash itself a key.
    expect((await submit(sha256, 1)).status).toBe(401);
  });

  it('takes the key as Bearer in any case, x-api-key or the cookie; a bad or malformed one is a 401', async () => {
    stack = await startStack({ pools: [], env: KEYS });
    const url = `${stack.api.url}/v1/tasks`;
    const status = async (headers: Record<string, string>) => (await fetch(url, { headers })).status;
    expect(await status({ authorization: 'Bearer key-acme' })).toBe(200);
    expect(await status({ authorization: 'bearer key-acme' })).toBe(200);
    expect(await status({ authorization: 'BEARER   key-acme' })).toBe(200);
    expect(await status({ 'x-api-key': 'key-acme' })).toBe(200);
    expect(await status({ cookie: 'theme=dark; agentq_key=key-acme' })).toBe(200);
    const bad: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: 'Basic a2V5LWFjbWU=' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer a b' },
      { cookie: 'agentq_key=%E0%A4%A' },
      { cookie: 'agentq_key=' },
      { 'x-api-key': ' ' },
    ];
    for (const headers of bad) {
      const response = await fetch(url, { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    // Health checks and the dashboard's files stay open.
    expect((await fetch(`${stack.api.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${stack.api.url}/`)).status).toBe(200);
  });

  it('says who the key belongs to', async () => {
    stack = await startStack({ pools: [], env: KEYS });
    expect(await (await fetch(`${stack.api.url}/v1/me`, as('key-acme'))).json()).toEqual({
      tenant: 'acme',
      admin: false,
    });
    expect(await (await fetch(`${stack.api.url}/v1/me`, as('key-admin'))).json()).toEqual({
      tenant: 'default',
      admin: true,
    });
  });
});

// A tenant's limits hold across cells too: its tasks are spread over them (cell-room.ts, tenant-totals.ts).
describe.each([1, 4])('tenants, in %i cell(s)', (count) => {
  beforeAll(() => {
    cells = count;
  });
  afterAll(() => {
    cells = 1;
  });
  const hasTool = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');

  it('a tenant sees, lists, streams, cancels, retries and answers only its own tasks', async () => {
    stack = await startStack({
      env: withKeys(),
      pools: ['casual'],
      rules: [
        {
          match: (request) => !hasTool(request) && JSON.stringify(request.messages).includes('ask me'),
          reply: { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which?' } }] },
        },
        { reply: { content: 'answered' } },
      ],
    });
    const url = stack.api.url;
    const [done] = await submitAs('key-acme', [{ prompt: 'acme task', agent: 'casual' }]);
    await waitForEnd(url, done!).catch(() => undefined);
    const [waiting] = await submitAs('key-acme', [{ prompt: 'ask me something', agent: 'casual' }]);
    await expect
      .poll(
        async () => ((await (await fetch(`${url}/v1/tasks/${waiting}`, as('key-acme'))).json()) as TaskView).status,
        { timeout: 10_000 },
      )
      .toBe('waiting');
    const [theirs] = await submitAs('key-globex', [{ prompt: 'ask me too', agent: 'casual' }]);

    // The owner sees its task, with its tenant.
    expect(((await (await fetch(`${url}/v1/tasks/${done}`, as('key-acme'))).json()) as TaskView).tenant).toBe('acme');
    // Another tenant: every route answers as if the task did not exist.
    const foreign = [
      fetch(`${url}/v1/tasks/${done}`, as('key-globex')),
      fetch(`${url}/v1/tasks/${done}/events`, as('key-globex', { headers: { accept: 'application/json' } })),
      fetch(`${url}/v1/tasks/${done}/events`, as('key-globex', { headers: { accept: 'text/event-stream' } })),
      fetch(`${url}/v1/tasks/${done}/events?after=3`, as('key-globex')),
      fetch(`${url}/v1/tasks/${waiting}/cancel`, as('key-globex', { method: 'POST' })),
      fetch(`${url}/v1/tasks/${done}/retry`, as('key-globex', { method: 'POST' })),
      fetch(
        `${url}/v1/tasks/${waiting}/input`,
        as('key-globex', { method: 'POST', body: JSON.stringify({ text: 'hijacked' }) }),
      ),
      // A fork would copy another tenant's memory and files.
      fetch(
        `${url}/v1/tasks/${done}/fork`,
        as('key-globex', { method: 'POST', body: JSON.stringify({ fromStep: 1 }) }),
      ),
    ];
    for (const response of await Promise.all(foreign)) {
      expect(response.status, response.url).toBe(404);
      expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'not_found',
        message: expect.stringMatching(/^No task with id/),
      });
    }
    const listed = (key: string) =>
      fetch(`${url}/v1/tasks`, as(key)).then(async (response) =>
        ((await response.json()) as { tasks: TaskView[] }).tasks.map((task) => task.id),
      );
    expect((await listed('key-acme')).sort()).toEqual([done, waiting].sort());
    expect(await listed('key-globex')).toEqual([theirs]);
    expect((await listed('key-admin')).sort()).toEqual([done, waiting, theirs].sort());
    await expect
      .poll(
        async () => ((await (await fetch(`${url}/v1/tasks/${theirs}`, as('key-globex'))).json()) as TaskView).status,
        { timeout: 10_000 },
      )
      .toBe('waiting');
    const waitingOf = (key: string) =>
      fetch(`${url}/v1/tasks?status=waiting`, as(key)).then(async (response) =>
        ((await response.json()) as { tasks: TaskView[] }).tasks.map((task) => task.id),
      );
    expect(await waitingOf('key-globex')).toEqual([theirs]);
    expect(await waitingOf('key-acme')).toEqual([waiting]);
    const statuses = await fetch(
      `${url}/v1/tasks/statuses`,
      as('key-globex', { method: 'POST', body: JSON.stringify({ ids: [done, theirs] }) }),
    ).then((response) => response.json());
    expect(statuses).toEqual({
      tasks: [
        { id: done, status: null },
        { id: theirs, status: expect.any(String) },
      ],
    });

    // The waiting task is still waiting for its own tenant's answer; the admin may see and act on it.
    expect(((await (await fetch(`${url}/v1/tasks/${waiting}`, as('key-acme'))).json()) as TaskView).status).toBe(
      'waiting',
    );
    expect((await fetch(`${url}/v1/tasks/${theirs}`, as('key-admin'))).status).toBe(200);
    expect(
      (
        await fetch(
          `${url}/v1/tasks/${waiting}/input`,
          as('key-acme', { method: 'POST', body: JSON.stringify({ text: 'mine' }) }),
        )
      ).status,
    ).toBe(202);
    // A retry stays with the task's tenant, whoever asks.
    const cancelled = await fetch(`${url}/v1/tasks/${theirs}/cancel`, as('key-globex', { method: 'POST' }));
    expect(cancelled.status).toBe(202);
    await waitForEnd(url, theirs!).catch(() => undefined);
    const retry = (await (
      await fetch(`${url}/v1/tasks/${theirs}/retry`, as('key-admin', { method: 'POST' }))
    ).json()) as { id: string };
    expect(((await (await fetch(`${url}/v1/tasks/${retry.id}`, as('key-globex'))).json()) as TaskView).tenant).toBe(
      'globex',
    );
    // A fork too, whoever asks: an admin's fork of acme's task is acme's, not in another tenant's lists.
    const fork = (await (
      await fetch(
        `${url}/v1/tasks/${done}/fork`,
        as('key-admin', { method: 'POST', body: JSON.stringify({ fromStep: 1 }) }),
      )
    ).json()) as { id: string };
    expect(((await (await fetch(`${url}/v1/tasks/${fork.id}`, as('key-acme'))).json()) as TaskView).tenant).toBe(
      'acme',
    );
    expect((await fetch(`${url}/v1/tasks/${fork.id}`, as('key-globex'))).status).toBe(404);
  });

  it('holds a tenant to its number of unfinished tasks, by submit, retry and bulk retry, and leaves the other tenants theirs', async () => {
    stack = await startStack({ pools: [], env: withKeys({ unfinished: 3 }) });
    const post = (key: string, path: string, body: unknown) =>
      fetch(`${stack!.api.url}${path}`, as(key, { method: 'POST', body: JSON.stringify(body) }));
    const listed = async (key: string) =>
      ((await (await fetch(`${stack!.api.url}/v1/tasks`, as(key))).json()) as { tasks: TaskView[] }).tasks.length;
    const [first] = await submitAs('key-acme', [
      { prompt: 'one', agent: 'casual' },
      { prompt: 'two', agent: 'casual' },
    ]);
    const over = await post('key-acme', '/v1/tasks', {
      tasks: [
        { prompt: 'three', agent: 'casual' },
        { prompt: 'four', agent: 'casual' },
      ],
    });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('5');
    expect(await over.json()).toMatchObject({
      error: {
        code: 'limit_reached',
        message:
          'Tenant acme has 2 tasks not yet ended (pending, queued, running or waiting); 2 more would pass its limit of 3 (tenants.acme.limits.unfinished). Nothing was submitted: submit again as they end, or cancel some. GET /v1/usage shows where it stands against each limit.',
      },
    });
    expect(await listed('key-acme')).toBe(2);
    // Another tenant has its own room; acme has room for one more.
    await submitAs('key-globex', [
      { prompt: 'g1', agent: 'casual' },
      { prompt: 'g2', agent: 'casual' },
      { prompt: 'g3', agent: 'casual' },
    ]);
    await submitAs('key-acme', [{ prompt: 'three', agent: 'casual' }]);
    // A cancelled task makes room; retrying it takes that room again, and past it a retry is refused too.
    expect((await post('key-acme', `/v1/tasks/${first}/cancel`, {})).status).toBe(202);
    const [fourth] = await submitAs('key-acme', [{ prompt: 'four', agent: 'casual' }]);
    expect((await post('key-acme', `/v1/tasks/${first}/retry`, {})).status).toBe(429);
    expect((await post('key-acme', '/v1/tasks/bulk', { action: 'retry', status: 'cancelled' })).status).toBe(429);
    expect((await post('key-acme', `/v1/tasks/${fourth}/cancel`, {})).status).toBe(202);
    expect((await post('key-acme', `/v1/tasks/${first}/retry`, {})).status).toBe(202);
    expect(await listed('key-acme')).toBe(5);
  });

  it('holds a tenant to its limits when its submits come all at once, so that parallel requests cannot pass them together', async () => {
    stack = await startStack({
      pools: [],
      env: withKeys({ unfinished: 5, stored: 8 }),
    });
    const post = (tasks: unknown[]) =>
      fetch(`${stack!.api.url}/v1/tasks`, as('key-acme', { method: 'POST', body: JSON.stringify({ tasks }) }));
    const listed = async () =>
      ((await (await fetch(`${stack!.api.url}/v1/tasks?limit=500`, as('key-acme'))).json()) as { tasks: TaskView[] })
        .tasks;
    // Twenty requests of two tasks each, sent together: two of them fit under the limit of five.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        post([
          { prompt: `a${index}`, agent: 'casual' },
          { prompt: `b${index}`, agent: 'casual' },
        ]).then((response) => response.status),
      ),
    );
    expect(statuses.filter((status) => status === 202)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(18);
    expect(await listed()).toHaveLength(4);
    // Cancelled, they leave room for unfinished tasks but still count as stored (limit 8): of ten
    // single-task requests at once, four pass.
    await fetch(
      `${stack.api.url}/v1/tasks/bulk`,
      as('key-acme', { method: 'POST', body: JSON.stringify({ action: 'cancel', status: 'queued' }) }),
    );
    const singles = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        post([{ prompt: `c${index}`, agent: 'casual' }]).then((response) => response.status),
      ),
    );
    expect(singles.filter((status) => status === 202)).toHaveLength(4);
    expect(await listed()).toHaveLength(8);
  });

  it('holds a tenant to its number of stored tasks, ended ones included, so cancelling what it submits fills nothing', async () => {
    stack = await startStack({ pools: [], env: withKeys({ stored: 3 }) });
    const post = (key: string, path: string, body: unknown) =>
      fetch(`${stack!.api.url}${path}`, as(key, { method: 'POST', body: JSON.stringify(body) }));
    await submitAs('key-acme', [
      { prompt: 'one', agent: 'casual' },
      { prompt: 'two', agent: 'casual' },
      { prompt: 'three', agent: 'casual' },
    ]);
    // Cancelled at once: nothing of acme's is unfinished, and all three are still kept.
    expect(
      await (await post('key-acme', '/v1/tasks/bulk', { action: 'cancel', status: 'queued' })).json(),
    ).toMatchObject({ matched: 3, changed: 3 });
    const over = await post('key-acme', '/v1/tasks', { tasks: [{ prompt: 'four', agent: 'casual' }] });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(await over.json()).toEqual({
      error: {
        code: 'limit_reached',
        message:
          'Tenant acme holds 3 tasks, ended ones included (they are kept for AGENTQ_RETENTION_HOURS); 1 more would pass its limit of 3 (tenants.acme.limits.stored). Nothing was submitted: submit again as the oldest pass their retention, or ask the operator for a higher limit. GET /v1/usage shows where it stands against each limit.',
        details: { tenant: 'acme', stored: 3, requested: 1, limit: 3 },
      },
    });
    expect((await post('key-acme', '/v1/tasks/bulk', { action: 'retry', status: 'cancelled' })).status).toBe(429);
    const listed = (await (await fetch(`${stack.api.url}/v1/tasks`, as('key-acme'))).json()) as { tasks: TaskView[] };
    expect(listed.tasks.map((task) => task.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    // Another tenant keeps its own room, and cannot delete acme's tasks; acme makes room by deleting one.
    expect(await submitAs('key-globex', [{ prompt: 'g1', agent: 'casual' }])).toHaveLength(1);
    const remove = (key: string, id: string) =>
      fetch(`${stack!.api.url}/v1/tasks/${id}`, as(key, { method: 'DELETE' }));
    expect((await remove('key-globex', listed.tasks[0]!.id)).status).toBe(404);
    expect((await remove('key-acme', listed.tasks[0]!.id)).status).toBe(204);
    expect(await submitAs('key-acme', [{ prompt: 'four', agent: 'casual' }])).toHaveLength(1);
    // In bulk too: a tenant's bulk delete finds only its own ended tasks, and frees their room.
    await post('key-globex', '/v1/tasks/bulk', { action: 'cancel', status: 'queued' });
    expect(await (await post('key-acme', '/v1/tasks/bulk', { action: 'delete', status: 'cancelled' })).json()).toEqual({
      action: 'delete',
      matched: 2,
      changed: 2,
      more: false,
    });
    expect(
      await (await post('key-globex', '/v1/tasks/bulk', { action: 'delete', status: 'cancelled' })).json(),
    ).toEqual({ action: 'delete', matched: 1, changed: 1, more: false });
    expect(
      await submitAs('key-acme', [
        { prompt: 'five', agent: 'casual' },
        { prompt: 'six', agent: 'casual' },
      ]),
    ).toHaveLength(2);
  });

  it('holds a tenant to the bytes its tasks wrote to Redis (their answers too), and frees them when its ended tasks are deleted', async () => {
    // Each answer is 8,000 bytes, written three times (the model's message, its event, the result): two
    // tasks take acme past its 0.05 MiB (52,429 bytes), one does not.
    stack = await startStack({
      pools: ['casual'],
      rules: [{ reply: { content: 'a'.repeat(8_000) } }],
      env: withKeys({ mb: 0.05 }),
    });
    const post = (key: string, path: string, body: unknown) =>
      fetch(`${stack!.api.url}${path}`, as(key, { method: 'POST', body: JSON.stringify(body) }));
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    for (const prompt of ['one', 'two']) {
      const [id] = await submitAs('key-acme', [{ prompt, agent: 'casual' }]);
      await waitForEnd(stack.api.url, id!, auth('key-acme'));
    }
    const over = await post('key-acme', '/v1/tasks', { tasks: [{ prompt: 'three', agent: 'casual' }] });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    const { error } = (await over.json()) as {
      error: { code: string; message: string; details: { writtenBytes: number; limitBytes: number } };
    };
    expect(error.code).toBe('limit_reached');
    expect(error.message).toMatch(
      /^Tenant acme's stored tasks have written 0\.1 MiB to Redis .* would pass its limit of 0\.1 MiB \(tenants\.acme\.limits\.mb\)\. Nothing was submitted: delete ended tasks/,
    );
    expect(error.details.limitBytes).toBe(52_429);
    expect(error.details.writtenBytes).toBeGreaterThan(2 * 3 * 8_000);
    // A fork is held to it too; another tenant keeps its own room.
    const listed = (await (await fetch(`${stack.api.url}/v1/tasks`, as('key-acme'))).json()) as { tasks: TaskView[] };
    expect((await post('key-acme', `/v1/tasks/${listed.tasks[0]!.id}/fork`, { fromStep: 1 })).status).toBe(429);
    expect(await submitAs('key-globex', [{ prompt: 'g1', agent: 'casual' }])).toHaveLength(1);
    // Deleting one ended task gives its bytes back.
    expect(
      (await fetch(`${stack.api.url}/v1/tasks/${listed.tasks[0]!.id}`, as('key-acme', { method: 'DELETE' }))).status,
    ).toBe(204);
    expect(await submitAs('key-acme', [{ prompt: 'three', agent: 'casual' }])).toHaveLength(1);
  });

  it("shows a tenant its usage against each of its limits, as its submits find them; an admin any tenant's", async () => {
    // One answer of 20,000 characters (written three times) passes acme's 0.05 MiB (52,429 bytes), and its
    // 1,000 tokens acme's daily limit; coder tasks stay queued (no coder pool), holding their places.
    const env = withKeys(
      { unfinished: 3, stored: 4, mb: 0.05 },
      { acme: { limits: { tokensPerDay: 1000, usdPerDay: 5 } } },
    );
    stack = await startStack({
      pools: ['casual'],
      rules: [{ reply: { content: 'a'.repeat(20_000), usage: { promptTokens: 700, completionTokens: 300 } } }],
      env,
    });
    const url = stack.api.url;
    const usage = async (key: string, query = '') => {
      const response = await fetch(`${url}/v1/usage${query}`, as(key));
      expect(response.status).toBe(200);
      return (await response.json()) as UsageView;
    };
    const submitStatus = async (key: string) =>
      (
        await fetch(
          `${url}/v1/tasks`,
          as(key, { method: 'POST', body: JSON.stringify({ tasks: [{ prompt: 'one more', agent: 'coder' }] }) }),
        )
      ).status;
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(await usage('key-acme')).toEqual({
      tenant: 'acme',
      tasks: { unfinished: 0, stored: 0 },
      writtenBytes: 0,
      today: { tokens: 0, usd: 0, resetsAt: midnight.toISOString() },
      limits: { unfinished: 3, stored: 4, writtenBytes: 52_429, daily: { tokens: 1000, usd: 5 } },
      reached: [],
    });

    await submitAs('key-acme', [
      { prompt: 'queued one', agent: 'coder' },
      { prompt: 'queued two', agent: 'coder' },
    ]);
    const queued = await usage('key-acme');
    expect(queued).toMatchObject({ tasks: { unfinished: 2, stored: 2 }, reached: [] });
    expect(queued.writtenBytes).toBeGreaterThan(2 * 512);
    const [answered] = await submitAs('key-acme', [{ prompt: 'answer at length', agent: 'casual' }]);
    await waitForEnd(url, answered!, { authorization: 'Bearer key-acme' });
    const spent = await usage('key-acme');
    const task = (await (await fetch(`${url}/v1/tasks/${answered}`, as('key-acme'))).json()) as TaskView;
    expect(spent.tasks).toEqual({ unfinished: 2, stored: 3 });
    expect(spent.today).toMatchObject({ tokens: task.usage.promptTokens + task.usage.completionTokens, usd: 0 });
    expect(spent.today!.tokens).toBe(1000);
    expect(spent.writtenBytes).toBeGreaterThan(queued.writtenBytes + 3 * 20_000);
    expect(spent.reached).toEqual(['writtenBytes', 'daily']);
    expect(await submitStatus('key-acme')).toBe(429);
    // Deleting the answered task gives its bytes back: under the byte limit again (the day's spending stays).
    expect((await fetch(`${url}/v1/tasks/${answered}`, as('key-acme', { method: 'DELETE' }))).status).toBe(204);
    expect(await usage('key-acme')).toMatchObject({
      tasks: { unfinished: 2, stored: 2 },
      writtenBytes: queued.writtenBytes,
      reached: ['daily'],
    });

    // globex: no daily limit (its spending is not counted); at its unfinished limit, then its stored one too.
    await submitAs('key-globex', [
      { prompt: 'g1', agent: 'coder' },
      { prompt: 'g2', agent: 'coder' },
      { prompt: 'g3', agent: 'coder' },
    ]);
    const full = await usage('key-globex');
    expect(full).toMatchObject({
      tenant: 'globex',
      tasks: { unfinished: 3, stored: 3 },
      today: null,
      limits: { daily: null },
      reached: ['unfinished'],
    });
    expect(await submitStatus('key-globex')).toBe(429);
    expect(
      await (
        await fetch(
          `${url}/v1/tasks/bulk`,
          as('key-globex', { method: 'POST', body: JSON.stringify({ action: 'cancel', status: 'queued' }) }),
        )
      ).json(),
    ).toMatchObject({ changed: 3 });
    expect((await usage('key-globex')).reached).toEqual([]);
    expect(await submitStatus('key-globex')).toBe(202);
    expect(await usage('key-globex')).toMatchObject({ tasks: { unfinished: 1, stored: 4 }, reached: ['stored'] });
    expect(await submitStatus('key-globex')).toBe(429);

    // A tenant reads its own usage only; an admin reads any tenant's (default: its own key's tenant).
    const foreign = await fetch(`${url}/v1/usage?tenant=globex`, as('key-acme'));
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({
      error: {
        code: 'forbidden',
        message: expect.stringContaining("This key is tenant acme's: it reads its own usage only"),
      },
    });
    expect(await usage('key-acme', '?tenant=acme')).toEqual(await usage('key-acme'));
    expect(await usage('key-admin', '?tenant=globex')).toEqual(await usage('key-globex'));
    expect(await usage('key-admin')).toMatchObject({ tenant: 'default', tasks: { unfinished: 0, stored: 0 } });
    expect((await fetch(`${url}/v1/usage`)).status).toBe(401);
    // Every tenant the keys name, and default, at once: an admin's only.
    const all = await fetch(`${url}/v1/tenants`, as('key-admin'));
    expect(all.status).toBe(200);
    expect(await all.json()).toEqual({
      tenants: [await usage('key-admin'), await usage('key-acme'), await usage('key-globex')],
    });
    const refusedAll = await fetch(`${url}/v1/tenants`, as('key-acme'));
    expect(refusedAll.status).toBe(403);
    expect(await refusedAll.json()).toMatchObject({
      error: { code: 'forbidden', message: 'This needs an admin key (a key of a tenant with admin: true).' },
    });
    for (const [query, message] of [
      ['?tenant=../acme', 'tenant: is not a tenant name'],
      ['?tennat=acme', 'tennat'],
      ['?tenant=acme&tenant=globex', 'The query gives tenant 2 times'],
    ] as const) {
      const response = await fetch(`${url}/v1/usage${query}`, as('key-admin'));
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining(message),
      });
    }
  });

  it('stops a running task of a tenant past its bytes after its step, and says why', async () => {
    // Every step writes a 20,000-byte file: its tool call is written twice (the model's message, its
    // event), so about 40 KB a step against acme's 0.1 MiB (104,858 bytes).
    const endless = {
      reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'big.txt', content: 'w'.repeat(20_000) } }] },
    };
    stack = await startStack({ pools: ['file'], rules: [endless], env: withKeys({ mb: 0.1 }) });
    const [id] = await submitAs('key-acme', [{ prompt: 'write forever', agent: 'file' }]);
    await waitForEnd(stack.api.url, id!, { authorization: 'Bearer key-acme' });
    const stopped = (await (await fetch(`${stack.api.url}/v1/tasks/${id}`, as('key-acme'))).json()) as TaskView;
    expect(stopped.status).toBe('failed');
    expect(stopped.error).toEqual({
      code: 'budget',
      message: expect.stringContaining(
        "tenant acme's tasks have written their limit to Redis (tenants.acme.limits.mb)",
      ),
    });
    // Stopped at its first step past the limit, long before AGENTQ_MAX_STEPS (20).
    expect(stack.double.requests.length).toBeGreaterThanOrEqual(2);
    expect(stack.double.requests.length).toBeLessThanOrEqual(4);
    expect(
      (
        await fetch(
          `${stack.api.url}/v1/tasks`,
          as('key-acme', { method: 'POST', body: JSON.stringify({ tasks: [{ prompt: 'more', agent: 'file' }] }) }),
        )
      ).status,
    ).toBe(429);
  });

  it('holds a fork to its tenant’s number of unfinished tasks, after saying what in the fork itself is wrong', async () => {
    const asked = (request: DoubleRequest) =>
      request.messages.some((message) => typeof message.content === 'string' && message.content.includes('ask me'));
    const rules = [
      {
        match: (request: DoubleRequest) =>
          asked(request) && !request.messages.some((message) => message.role === 'tool'),
        reply: { toolCalls: [{ id: 'ask1', name: 'ask_user', arguments: { question: 'Which?' } }] },
      },
      { reply: { content: 'done' } },
    ];
    stack = await startStack({ pools: ['casual'], rules, env: withKeys({ unfinished: 1 }) });
    const post = (path: string, body: unknown) =>
      fetch(`${stack!.api.url}${path}`, as('key-acme', { method: 'POST', body: JSON.stringify(body) }));
    const [source] = await submitAs('key-acme', [{ prompt: 'one step', agent: 'casual' }]);
    await waitForEnd(stack.api.url, source!, { authorization: 'Bearer key-acme' });
    // A task waiting on its user holds acme's one place.
    const [waiting] = await submitAs('key-acme', [{ prompt: 'ask me', agent: 'casual' }]);
    await waitForEvent(stack.api.url, waiting!, 'task.waiting', { authorization: 'Bearer key-acme' });
    const tooFar = await post(`/v1/tasks/${source}/fork`, { fromStep: 2 });
    expect(tooFar.status).toBe(409);
    expect(await tooFar.json()).toMatchObject({
      error: { message: expect.stringContaining('has 1 completed step: fromStep must be 1 to 1') },
    });
    const unborn = await post(`/v1/tasks/${waiting}/fork`, { fromStep: 1 });
    expect(unborn.status).toBe(409);
    expect(await unborn.json()).toMatchObject({
      error: { message: expect.stringContaining('has no completed step yet') },
    });
    const full = await post(`/v1/tasks/${source}/fork`, { fromStep: 1 });
    expect(full.status).toBe(429);
    expect(await full.json()).toMatchObject({
      error: { code: 'limit_reached', message: expect.stringContaining('tenants.acme.limits.unfinished') },
    });
    expect((await post(`/v1/tasks/${waiting}/cancel`, {})).status).toBe(202);
    expect((await post(`/v1/tasks/${source}/fork`, { fromStep: 1 })).status).toBe(202);
  });

  it('holds a tenant to its number of event streams, and leaves the other tenants theirs', async () => {
    stack = await startStack({ pools: [], env: withKeys({ sseStreams: 2 }) });
    const [acmeTask] = await submitAs('key-acme', [{ prompt: 'followed a lot', agent: 'casual' }]);
    const [globexTask] = await submitAs('key-globex', [{ prompt: 'followed once', agent: 'casual' }]);
    // Each open stream with its response, kept referenced: fetch closes the connection of a response
    // that is garbage collected.
    const streams: Array<{ controller: AbortController; response: Response }> = [];
    // Resolves once the stream's head arrived (it is counted by then), or with the refusal.
    const open = async (key: string, taskId: string) => {
      const controller = new AbortController();
      const response = await fetch(
        `${stack!.api.url}/v1/tasks/${taskId}/events`,
        as(key, { headers: { accept: 'text/event-stream' }, signal: controller.signal }),
      );
      if (response.ok) streams.push({ controller, response });
      return response;
    };
    const sseClients = async () =>
      Number(
        /^agentq_sse_clients (\d+)/m.exec(
          await (await fetch(`${stack!.api.url}/metrics`, as('key-admin'))).text(),
        )?.[1],
      );
    try {
      expect((await open('key-acme', acmeTask!)).status).toBe(200);
      expect((await open('key-acme', acmeTask!)).status).toBe(200);
      const third = await open('key-acme', acmeTask!);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('5');
      expect(await third.json()).toMatchObject({
        error: {
          code: 'limit_reached',
          message: expect.stringMatching(
            /^Tenant acme already follows 2 event streams on this API process, its limit \(tenants\.acme\.limits\.sseStreams\): close one/,
          ),
        },
      });
      // Its events read once, and another tenant's stream, are not held to it.
      expect(
        (
          await fetch(
            `${stack.api.url}/v1/tasks/${acmeTask}/events`,
            as('key-acme', { headers: { accept: 'application/json' } }),
          )
        ).status,
      ).toBe(200);
      expect((await open('key-globex', globexTask!)).status).toBe(200);
      // One of acme's streams closes: it may open another.
      streams.shift()!.controller.abort();
      await expect.poll(sseClients).toBe(2);
      expect((await open('key-acme', acmeTask!)).status).toBe(200);
      // The API stops while three streams follow: it closes them, and stops.
      await stack.close();
      stack = undefined;
    } finally {
      for (const stream of streams) stream.controller.abort();
    }
  });

  it('lets go of a stream whose client left while it was being set up (its count, its subscription)', async () => {
    stack = await startStack({ pools: [], env: withKeys({ sseStreams: 2 }) });
    const [taskId] = await submitAs('key-acme', [{ prompt: 'left at once', agent: 'casual' }]);
    const { port } = new URL(stack.api.url);
    // Each client sends its request and resets the connection at once: it is gone while the API still
    // reads the task and subscribes, before the stream listens for its close.
    await Promise.all(
      Array.from(
        { length: 20 },
        () =>
          new Promise<void>((resolve) => {
            const socket = connect(Number(port), '127.0.0.1', () => {
              socket.write(
                `GET /v1/tasks/${taskId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer key-acme\r\nAccept: text/event-stream\r\n\r\n`,
                () => socket.resetAndDestroy(),
              );
            });
            socket.on('close', () => resolve());
            socket.on('error', () => undefined);
          }),
      ),
    );
    // None of them keeps one of the tenant's two streams: both open, once the API has handled them all.
    const openBoth = async () => {
      const controllers = [new AbortController(), new AbortController()];
      try {
        return await Promise.all(
          controllers.map(
            async (controller) =>
              (
                await fetch(
                  `${stack!.api.url}/v1/tasks/${taskId}/events`,
                  as('key-acme', { headers: { accept: 'text/event-stream' }, signal: controller.signal }),
                )
              ).status,
          ),
        );
      } finally {
        for (const controller of controllers) controller.abort();
      }
    };
    await expect.poll(openBoth, { timeout: 5_000 }).toEqual([200, 200]);
    // And nothing of theirs is left: no stream counted, no subscription.
    const sseClients = async () =>
      Number(
        /^agentq_sse_clients (\d+)/m.exec(
          await (await fetch(`${stack!.api.url}/metrics`, as('key-admin'))).text(),
        )?.[1],
      );
    await expect.poll(sseClients, { timeout: 5_000 }).toBe(0);
    const subscribers = new Redis(redisUrl());
    try {
      const channel = `${stack.config.AGENTQ_REDIS_PREFIX}:events:${taskId}`;
      await expect
        .poll(async () => ((await subscribers.pubsub('NUMSUB', channel)) as [string, number])[1], { timeout: 5_000 })
        .toBe(0);
    } finally {
      subscribers.disconnect();
    }
  });

  it("a batch, a bulk action and the overview stay within a tenant, even with another tenant's batch name", async () => {
    stack = await startStack({ env: withKeys(), pools: [] });
    const url = stack.api.url;
    const submitBatch = async (key: string, prompts: string[]) => {
      const response = await fetch(
        `${url}/v1/tasks`,
        as(key, {
          method: 'POST',
          body: JSON.stringify({ batch: 'nightly', tasks: prompts.map((prompt) => ({ prompt, agent: 'casual' })) }),
        }),
      );
      expect(response.status).toBe(202);
      return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    };
    const acme = await submitBatch('key-acme', ['a1', 'a2']);
    const globex = await submitBatch('key-globex', ['g1']);
    const batchOf = (key: string) =>
      fetch(`${url}/v1/tasks?batch=nightly`, as(key)).then(async (response) =>
        ((await response.json()) as { tasks: TaskView[] }).tasks.map((task) => task.id).sort(),
      );
    expect(await batchOf('key-acme')).toEqual([...acme].sort());
    expect(await batchOf('key-globex')).toEqual(globex);
    // Globex cancels "its" nightly batch, and everything queued it may see: acme's tasks stay queued.
    const bulk = (key: string, body: unknown) =>
      fetch(`${url}/v1/tasks/bulk`, as(key, { method: 'POST', body: JSON.stringify(body) })).then((response) =>
        response.json(),
      );
    expect(await bulk('key-globex', { action: 'cancel', batch: 'nightly' })).toMatchObject({ matched: 1, changed: 1 });
    expect(await bulk('key-globex', { action: 'cancel', status: 'queued' })).toMatchObject({ matched: 0, changed: 0 });
    const statusOf = async (id: string) =>
      ((await (await fetch(`${url}/v1/tasks/${id}`, as('key-admin'))).json()) as TaskView).status;
    expect(await Promise.all(acme.map(statusOf))).toEqual(['queued', 'queued']);
    expect(await statusOf(globex[0]!)).toBe('cancelled');
    // The overview counts a tenant's own tasks; the admin's, everyone's.
    const counts = (key: string) =>
      fetch(`${url}/v1/overview`, as(key)).then(
        async (response) => ((await response.json()) as { counts: Record<string, number> }).counts,
      );
    expect(await counts('key-globex')).toMatchObject({ queued: 0, cancelled: 1 });
    expect(await counts('key-acme')).toMatchObject({ queued: 2, cancelled: 0 });
    expect(await counts('key-admin')).toMatchObject({ queued: 2, cancelled: 1 });
    // A batch name is part of a key name: what is not one is refused before it goes near Redis.
    expect((await fetch(`${url}/v1/tasks?batch=${encodeURIComponent('nightly:*')}`, as('key-acme'))).status).toBe(400);
  });

  it('the pools show a tenant only counts; bull-board opens for admins only', async () => {
    stack = await startStack({ env: withKeys(), pools: ['coder'] });
    const pools = (key: string) =>
      fetch(`${stack!.api.url}/v1/pools`, as(key)).then(
        (response) =>
          response.json() as Promise<{
            pools: Array<{ name: string; workers: unknown[]; workersOnline: number; isolation: unknown[] }>;
          }>,
      );
    const coder = (await pools('key-acme')).pools.find((pool) => pool.name === 'coder')!;
    expect(coder).toMatchObject({ workers: [], workersOnline: 1, isolation: [{ kind: 'jail', network: 'none' }] });
    expect((await pools('key-admin')).pools.find((pool) => pool.name === 'coder')!.workers).toHaveLength(1);
    expect((await fetch(`${stack.api.url}/admin/queues`, as('key-acme'))).status).toBe(403);
    expect((await fetch(`${stack.api.url}/admin/queues`)).status).toBe(401);
    expect((await fetch(`${stack.api.url}/admin/queues`, as('key-admin'))).status).toBe(200);
  });

  it("a planned task's subtasks belong to its tenant", async () => {
    stack = await startStack({
      env: withKeys(),
      pools: ['planner', 'casual'],
      rules: [
        {
          match: (request) => String(request.messages[0]?.content ?? '').startsWith('You are the planner'),
          reply: { content: '```json\n{"plan":[{"id":"1","agent":"casual","task":"say hi","need":[]}]}\n```' },
        },
        { reply: { content: 'hi' } },
      ],
    });
    const [root] = await submitAs('key-acme', [{ prompt: 'plan something' }]);
    await expect
      .poll(
        async () =>
          ((await (await fetch(`${stack!.api.url}/v1/tasks/${root}`, as('key-acme'))).json()) as TaskView).children
            ?.length ?? 0,
        { timeout: 15_000 },
      )
      .toBe(1);
    const task = (await (await fetch(`${stack.api.url}/v1/tasks/${root}`, as('key-acme'))).json()) as TaskView;
    const subtask = task.children![0]!.id;
    expect(
      ((await (await fetch(`${stack.api.url}/v1/tasks/${subtask}`, as('key-acme'))).json()) as TaskView).tenant,
    ).toBe('acme');
    expect((await fetch(`${stack.api.url}/v1/tasks/${subtask}`, as('key-globex'))).status).toBe(404);
    expect(
      (
        await fetch(
          `${stack.api.url}/v1/tasks/${subtask}/events`,
          as('key-globex', { headers: { accept: 'application/json' } }),
        )
      ).status,
    ).toBe(404);
  });
});

/**
 * Webhooks attacked by tenants over HTTP, through a real API and a real worker process on a Redis of
 * their own, with the wire double as the model: a webhook URL that does not parse is a 400 naming its
 * field, never a 500.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';

const INSTALL_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

const prefixes: string[] = [];
let dataDir: string;
let double: OpenAIDouble;
const started: AgentqProcess[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-webhook-attacks-'));
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
});

afterAll(async () => {
  await Promise.all(started.map((process) => process.stop('SIGKILL')));
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

async function call(baseUrl: string, method: string, route: string, key: string | undefined, body?: unknown) {
  const response = await fetch(`${baseUrl}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

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

/**
 * What an operator sees of a batch, from outside: `agentq api` and `agentq worker` as processes, their
 * stdout read as JSON lines, and their `/metrics` read with a Prometheus text-format parser. The batch
 * has successes, failures and tool calls; keys and prompts must never reach a line.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageView } from '@agentq/contract';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { freePort } from '../setup/redis-server.js';
import { logLines, processEnv, spawnAgentq, type AgentqProcess, type LogLine } from '../helpers/processes.js';
import { scrape } from '../helpers/prometheus.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { tenantsEnv } from '../helpers/config-file.js';

const MODEL_KEY = 'sk-model-key-marker-5f1d';
const TENANT_KEY = 'tenant-key-marker-8c2e';
const ADMIN_KEY = 'admin-key-marker-3a9b';
const PROMPT = 'prompt-marker-77aa';
const tenant = { authorization: `Bearer ${TENANT_KEY}`, 'content-type': 'application/json' };
const admin = { authorization: `Bearer ${ADMIN_KEY}` };

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const userText = (request: DoubleRequest) =>
  JSON.stringify(request.messages.filter((message) => message.role === 'user'));

const prefix = freshPrefix('ops');
let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;
let workerMetrics: string;

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      // "fail" tasks: the model refuses for good (a 400 is not retried): the task fails.
      {
        match: (request) => userText(request).includes('fail'),
        reply: { error: { status: 400, message: 'this model cannot do that' } },
      },
      {
        match: (request) => userText(request).includes('write') && toolResults(request) === 0,
        reply: {
          toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hi' } }],
          usage: { promptTokens: 50, completionTokens: 10 },
        },
      },
      { reply: { content: 'done', usage: { promptTokens: 30, completionTokens: 5 } } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-ops-'));
  const metricsPort = await freePort();
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'ops-model',
    extra: {
      OPENAI_API_KEY: MODEL_KEY,
      AGENTQ_LLM_MAX_RETRIES: '0',
      ...tenantsEnv({ acme: { keys: [TENANT_KEY] }, default: { keys: [ADMIN_KEY], admin: true } }),
      AGENTQ_METRICS_PORT: String(metricsPort),
    },
  });
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'casual,file'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving casual, file/);
  workerMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
});

afterAll(async () => {
  await Promise.all([api?.stop(), worker?.stop()]);
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

/** Every line it wrote, each of which must be JSON. */
function lines(process: AgentqProcess): LogLine[] {
  const written = process
    .output()
    .split('\n')
    .filter((line) => line.trim());
  const parsed = logLines(process.output());
  expect(parsed).toHaveLength(written.length);
  return parsed;
}

async function settled(ids: string[]): Promise<Array<{ id: string; status: string }>> {
  let tasks: Array<{ id: string; status: string }> = [];
  await expect
    .poll(
      async () => {
        const response = await fetch(`${baseUrl}/v1/tasks/statuses`, {
          method: 'POST',
          headers: tenant,
          body: JSON.stringify({ ids }),
        });
        tasks = ((await response.json()) as { tasks: Array<{ id: string; status: string }> }).tasks;
        return tasks.every((task) => task.status === 'completed' || task.status === 'failed');
      },
      { timeout: 20_000 },
    )
    .toBe(true);
  return tasks;
}

describe('a batch, as an operator watches it', () => {
  let ids: string[];
  let before: { api: Awaited<ReturnType<typeof scrape>>; worker: Awaited<ReturnType<typeof scrape>> };

  it('runs a batch of successes, failures and tool calls', async () => {
    before = { api: await scrape(`${baseUrl}/metrics`, admin), worker: await scrape(workerMetrics) };
    const tasks = [
      ...Array.from({ length: 6 }, (_, index) => ({ prompt: `${PROMPT} say hi ${index}`, agent: 'casual' })),
      ...Array.from({ length: 3 }, (_, index) => ({ prompt: `${PROMPT} fail ${index}`, agent: 'casual' })),
      ...Array.from({ length: 3 }, (_, index) => ({ prompt: `${PROMPT} write ${index}`, agent: 'file' })),
    ];
    const response = await fetch(`${baseUrl}/v1/tasks`, {
      method: 'POST',
      headers: tenant,
      body: JSON.stringify({ tasks }),
    });
    expect(response.status).toBe(202);
    ids = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    // A client's mistake is logged as what it was: a 400.
    expect(
      (await fetch(`${baseUrl}/v1/tasks`, { method: 'POST', headers: tenant, body: '{"tasks": []}' })).status,
    ).toBe(400);
    const statuses = await settled(ids);
    expect(statuses.filter((task) => task.status === 'failed')).toHaveLength(3);
  });

  it('writes JSON lines: one per request, with its route, status, duration and tenant', async () => {
    await expect.poll(() => lines(api).filter((line) => line.msg === 'request' && line.status === 400).length).toBe(1);
    const requests = lines(api).filter((line) => line.msg === 'request');
    expect(
      requests.find((line) => line.method === 'POST' && line.route === '/v1/tasks' && line.status === 202),
    ).toMatchObject({ level: 'info', name: 'agentq-api', tenant: 'acme', durationMs: expect.any(Number) });
    expect(requests.find((line) => line.route === '/v1/tasks/statuses')).toMatchObject({
      method: 'POST',
      status: 200,
      tenant: 'acme',
    });
    for (const line of lines(api))
      expect(line).toMatchObject({
        level: expect.any(String),
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        pid: expect.any(Number),
        msg: expect.any(String),
      });
  });

  it("logs each task's start and end with its figures, and why a failure failed", async () => {
    // A task's end is in Redis (its status) before its line is out (lines are written asynchronously).
    await expect
      .poll(() => new Set(lines(worker).flatMap((line) => (line.msg === 'task ended' ? [line.taskId] : []))).size)
      .toBe(ids.length);
    const log = lines(worker);
    const started = log.filter((line) => line.msg === 'task started');
    const ended = log.filter((line) => line.msg === 'task ended');
    expect(new Set(started.map((line) => line.taskId))).toEqual(new Set(ids));
    expect(new Set(ended.map((line) => line.taskId))).toEqual(new Set(ids));
    for (const line of started)
      expect(line).toMatchObject({
        name: 'agentq-worker',
        rootId: line.taskId,
        attempt: 1,
        resumed: false,
        worker: expect.any(String),
      });
    const written = ended.find((line) => line.agent === 'file');
    expect(written).toMatchObject({
      level: 'info',
      status: 'completed',
      steps: 2,
      promptTokens: 80,
      completionTokens: 15,
      durationMs: expect.any(Number),
    });
    const failed = ended.filter((line) => line.status === 'failed');
    expect(failed).toHaveLength(3);
    for (const line of failed)
      expect(line).toMatchObject({
        level: 'warn',
        agent: 'casual',
        reason: 'error',
        error: expect.stringContaining('this model cannot do that'),
      });
  });

  it('never writes a key or a prompt', () => {
    const everything = api.output() + worker.output();
    for (const secret of [MODEL_KEY, TENANT_KEY, ADMIN_KEY, PROMPT]) expect(everything).not.toContain(secret);
  });

  it('serves /metrics to admins, whose counters moved with the batch', async () => {
    expect((await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${TENANT_KEY}` } })).status).toBe(
      403,
    );
    expect((await fetch(`${baseUrl}/metrics`)).status).toBe(401);
    const after = await scrape(`${baseUrl}/metrics`, admin);
    expect(
      after.value('agentq_tasks_submitted_total', { agent: 'casual' }) -
        before.api.value('agentq_tasks_submitted_total', { agent: 'casual' }),
    ).toBe(9);
    expect(
      after.value('agentq_tasks_submitted_total', { agent: 'file' }) -
        before.api.value('agentq_tasks_submitted_total', { agent: 'file' }),
    ).toBe(3);
    expect(after.value('agentq_workers_online', { pool: 'casual' })).toBe(1);
    expect(after.value('agentq_queue_jobs', { pool: 'casual', state: 'active' })).toBe(0);
    // Each configured tenant's usage against its limits, as GET /v1/usage has it: acme's batch ended and kept.
    const usage = (await (await fetch(`${baseUrl}/v1/usage`, { headers: tenant })).json()) as UsageView;
    expect(usage.tasks).toEqual({ unfinished: 0, stored: 12 });
    expect(after.value('agentq_tenant_tasks', { tenant: 'acme', state: 'unfinished' })).toBe(0);
    expect(after.value('agentq_tenant_tasks', { tenant: 'acme', state: 'stored' })).toBe(12);
    expect(after.value('agentq_tenant_written_bytes', { tenant: 'acme' })).toBe(usage.writtenBytes);
    expect(usage.writtenBytes).toBeGreaterThan(12 * 512);
    expect(after.value('agentq_tenant_limit_used_ratio', { tenant: 'acme', limit: 'stored' })).toBe(12 / 1_000_000);
    expect(after.value('agentq_tenant_tasks', { tenant: 'default', state: 'stored' })).toBe(0);
    expect(
      after.count('agentq_http_request_duration_seconds', { route: '/v1/tasks', status: '202' }),
    ).toBeGreaterThanOrEqual(1);
    // The standard process metrics are there too (event-loop lag among them).
    expect(after.families.nodejs_eventloop_lag_seconds?.type).toBe('gauge');
  });

  it("serves the worker's metrics on its port: ends by status and reason, steps, model and tool calls, tokens", async () => {
    const after = await scrape(workerMetrics);
    const moved = (name: string, labels: Record<string, string>) =>
      after.value(name, labels) - before.worker.value(name, labels);
    const counted = (name: string, labels: Record<string, string>) =>
      after.count(name, labels) - before.worker.count(name, labels);
    expect(moved('agentq_tasks_ended_total', { agent: 'casual', status: 'completed' })).toBe(6);
    expect(moved('agentq_tasks_ended_total', { agent: 'file', status: 'completed' })).toBe(3);
    expect(moved('agentq_tasks_ended_total', { agent: 'casual', status: 'failed', reason: 'error' })).toBe(3);
    expect(counted('agentq_tool_call_duration_seconds', { tool: 'write_file', ok: 'true' })).toBe(3);
    expect(counted('agentq_step_duration_seconds', { agent: 'file' })).toBe(6);
    // 6 + 3 x 2 answered calls; a refused call has no response to time.
    expect(counted('agentq_model_call_duration_seconds', { model: 'ops-model' })).toBe(12);
    expect(moved('agentq_tokens_total', { model: 'ops-model', kind: 'prompt' })).toBe(6 * 30 + 3 * 80);
    expect(moved('agentq_tokens_total', { model: 'ops-model', kind: 'completion' })).toBe(6 * 5 + 3 * 15);
    expect(after.value('agentq_worker_active_jobs')).toBe(0);
  });
});

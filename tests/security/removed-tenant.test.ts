/**
 * An operator removes a tenant from the configuration file (its keys gone) and restarts agentq. What the
 * tenant had started must not go on spending the install's model: a run cut short by the restart, tasks
 * waiting behind a concurrency key, a task waiting for its pool's worker. Each fails when a worker would
 * take it, with a `task.failed` that says why, and the model is never called for it. Against a real API
 * and worker processes on a Redis of their own prefix, the model being the wire double.
 */
import type { TaskEvent, TaskView } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv, type TestTenant } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { apiCall } from '../helpers/api-call.js';

const prefix = freshPrefix('removed-tenant');
const GONE = `gone-${randomBytes(8).toString('hex')}`;
const STAY = `stay-${randomBytes(8).toString('hex')}`;
const ROOT = `root-${randomBytes(8).toString('hex')}`;
const tenants: Record<string, TestTenant> = {
  gone: { keys: [GONE] },
  stay: { keys: [STAY] },
  root: { keys: [ROOT], admin: true },
};

let double: OpenAIDouble;
let dataDir: string;
let processes: AgentqProcess[] = [];
let baseUrl: string;

/** Starts the API and a worker of these pools with these tenants in the configuration file. */
async function start(withTenants: Record<string, TestTenant>, pools: string): Promise<void> {
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'removed-tenant',
    // A killed worker's job is taken up again within about 2 s.
    extra: { ...tenantsEnv(withTenants), AGENTQ_JOB_LOCK_MS: '2000' },
  });
  const api = spawnAgentq(['api'], env);
  const worker = spawnAgentq(['worker', '--pools', pools], env);
  processes = [api, worker];
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving/);
}

async function stop(): Promise<void> {
  await Promise.all(processes.map((process) => process.stop('SIGKILL')));
}

const call = <T>(key: string, method: string, url: string, body?: unknown) =>
  apiCall<T>(baseUrl, key, method, url, body);

async function submit(key: string, task: Record<string, unknown>): Promise<string> {
  const answer = await call<{ tasks: Array<{ id: string }> }>(key, 'POST', '/v1/tasks', { tasks: [task] });
  expect(answer.status).toBe(202);
  return answer.body.tasks[0]!.id;
}

const task = async (id: string) => (await call<TaskView>(ROOT, 'GET', `/v1/tasks/${id}`)).body;
/** The model requests that carry `marker` (a prompt of the removed tenant's). */
const requestsWith = (marker: string) =>
  double.requests.filter((request: DoubleRequest) => JSON.stringify(request.messages).includes(marker)).length;

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      // The first run of the removed tenant's task never gets its answer: the restart cuts it short.
      {
        match: (request) => JSON.stringify(request.messages).includes('gone-running'),
        reply: { fault: 'hang' },
        times: 1,
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-removed-tenant-'));
}, 60_000);

afterAll(async () => {
  await stop();
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

describe('a tenant removed from the configuration file', () => {
  it('has its running, key-held and queued tasks fail when a worker takes them, never calling the model', async () => {
    // Only the casual pool runs: a planned task waits for the planner's worker.
    await start(tenants, 'casual');
    const running = await submit(GONE, { prompt: 'gone-running', agent: 'casual', concurrencyKey: 'k' });
    await expect.poll(() => requestsWith('gone-running'), { timeout: 20_000 }).toBe(1);
    const keyHeld = [
      await submit(GONE, { prompt: 'gone-key-1', agent: 'casual', concurrencyKey: 'k' }),
      await submit(GONE, { prompt: 'gone-key-2', agent: 'casual', concurrencyKey: 'k' }),
    ];
    const planned = await submit(GONE, { prompt: 'gone-planned' });
    for (const id of [...keyHeld, planned]) expect((await task(id)).status).toBe('queued');

    // The operator removes the tenant and restarts agentq, with every pool this time.
    await stop();
    const { gone: _removed, ...remaining } = tenants;
    await start(remaining, 'casual,planner');
    console.log(`restarted at ${new Date().toISOString()}`);
    const staying = await submit(STAY, { prompt: 'stay-task', agent: 'casual' });

    const ids = [running, ...keyHeld, planned];
    const ended = async () =>
      (await Promise.all(ids.map(task))).filter((each) => each.status !== 'queued' && each.status !== 'running');
    await expect.poll(async () => (await ended()).length, { timeout: 30_000 }).toBe(ids.length);
    const views = await Promise.all(ids.map(task));
    console.log(
      `a removed tenant's tasks after the restart: ${JSON.stringify(views.map((view) => ({ prompt: view.prompt, status: view.status, code: view.error?.code, finishedAt: view.finishedAt })))}`,
    );
    for (const view of views) {
      expect(view.status).toBe('failed');
      expect(view.error).toMatchObject({ code: 'tenant_gone' });
      expect(view.error!.message).toMatch(/tenant gone is no longer in the configuration file/);
      const events = (await call<TaskEvent[]>(ROOT, 'GET', `/v1/tasks/${view.id}/events`)).body;
      const failed = events.filter((event) => event.type === 'task.failed');
      expect(failed).toHaveLength(1);
      expect(failed[0]!.data).toMatchObject({ error: { code: 'tenant_gone' } });
      // It never started again after the restart: no model call, no step.
      expect(events.filter((event) => event.type === 'llm.request' && event.ts > failed[0]!.ts)).toEqual([]);
    }
    // The model saw the cut-short run's one call, and nothing of the tenant's after the restart.
    expect(requestsWith('gone-running')).toBe(1);
    for (const marker of ['gone-key-1', 'gone-key-2', 'gone-planned']) expect(requestsWith(marker)).toBe(0);
    // Another tenant's work runs as before.
    await expect.poll(async () => (await task(staying)).status, { timeout: 20_000 }).toBe('completed');
  }, 120_000);
});

/**
 * Tasks that wait for a down model endpoint (503) go back through admission as new jobs, attacked from
 * outside (round 4): SIGKILL workers while a batch waits (no lost or doubled run), cancel waiting tasks
 * (they never run, and /v1/pools stops counting them), and a tenant removed from the file while its tasks
 * wait: they fail `tenant_gone` and never reach the model (before: 1 of 6 failed within 20 s, the other 5
 * after 300,355 ms, behind a trier that never came; now all 6 within seconds). Real API and workers.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { firstUserText, startOpenAIDouble, type DoubleReply, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { apiCall } from '../helpers/api-call.js';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEventWhere } from '../helpers/sse.js';

const KEY_A = `a-${randomBytes(8).toString('hex')}`;
const KEY_GONE = `gone-${randomBytes(8).toString('hex')}`;
const KEY_OPS = `ops-${randomBytes(8).toString('hex')}`;

const down = new Set<string>(); // prompt prefixes the endpoint answers 503
const served = new Map<string, number>();
const hanging = { inFlight: 0 };
const reply = async (request: DoubleRequest): Promise<DoubleReply> => {
  const prompt = firstUserText(request);
  if (prompt.startsWith('H-') && down.has('H-')) {
    hanging.inFlight += 1;
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    hanging.inFlight -= 1;
  }
  await new Promise((resolve) => setTimeout(resolve, 30));
  if ([...down].some((prefix) => prompt.startsWith(prefix)))
    return { error: { status: 503, message: 'overloaded', type: 'server_error' } };
  served.set(prompt, (served.get(prompt) ?? 0) + 1);
  return { content: 'served' };
};

let double: OpenAIDouble;
let prefix: string;
let dataDir: string;
let env: Record<string, string>;
let api: AgentqProcess;
let workers: AgentqProcess[] = [];
const POOLS = 'casual';

function spawnWorker(): AgentqProcess {
  const worker = spawnAgentq(['worker', '--pools', POOLS], env);
  workers.push(worker);
  return worker;
}
async function startAll(): Promise<void> {
  api = spawnAgentq(['api'], env);
  const fresh = [spawnWorker(), spawnWorker()];
  await api.waitFor(/listening on (http[^\s"]+)/);
  await Promise.all(fresh.map((worker) => worker.waitFor(/serving casual/)));
}
let baseUrl: string;

beforeAll(async () => {
  prefix = freshPrefix('outage-waits');
  double = await startOpenAIDouble({ rules: [{ reply }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-outage-waits-'));
  env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'm',
    extra: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: '4',
      AGENTQ_FAIR_BACKLOG: '10',
      AGENTQ_JOB_LOCK_MS: '2000',
      ...tenantsEnv(
        { a: { keys: [KEY_A] }, gone: { keys: [KEY_GONE] }, ops: { keys: [KEY_OPS], admin: true } },
        { models: { m: { outage: { maxBackoffSeconds: 1 } } } },
      ),
    },
  });
  baseUrl = `http://127.0.0.1:${env.PORT}`;
  await startAll();
}, 60_000);
afterAll(async () => {
  await Promise.all([api, ...workers].map((process) => process?.stop('SIGKILL')));
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
async function submit(key: string, prompts: string[], extra: Record<string, unknown> = {}): Promise<string[]> {
  const answer = await apiCall<{ tasks: Array<{ id: string }> }>(baseUrl, key, 'POST', '/v1/tasks', {
    tasks: prompts.map((prompt) => ({ prompt, agent: 'casual', ...extra })),
  });
  expect(answer.status).toBe(202);
  return answer.body.tasks.map((task) => task.id);
}
const waited = (key: string, id: string) =>
  waitForEventWhere(
    baseUrl,
    id,
    (event) => event.type === 'task.queued' && event.data.modelUnreachable === true,
    auth(key),
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function endsWithin(key: string, ids: string[], ms: number): Promise<Map<string, string>> {
  const deadline = Date.now() + ms;
  const statuses = new Map<string, string>();
  for (;;) {
    const answer = await apiCall<{ tasks: Array<{ id: string; status: string }> }>(
      baseUrl,
      key,
      'POST',
      '/v1/tasks/statuses',
      { ids },
    );
    for (const task of answer.body.tasks) statuses.set(task.id, task.status);
    if ([...statuses.values()].every((status) => !['queued', 'running', 'pending'].includes(status))) return statuses;
    if (Date.now() > deadline) return statuses;
    await sleep(250);
  }
}

it('runs every task of a waiting batch exactly once across SIGKILLed workers', async () => {
  down.add('K-');
  const prompts = Array.from({ length: 30 }, (_, index) => `K-${index}`);
  const ids = await submit(KEY_A, prompts);
  await Promise.all(ids.slice(0, 5).map((id) => waited(KEY_A, id)));
  // Kill one worker mid-wait, start another; again a moment later; then the endpoint comes back and
  // the other worker is killed while the batch is coming back.
  workers[0]!.child.kill('SIGKILL');
  const third = spawnWorker();
  await third.waitFor(/serving casual/);
  await sleep(1_500);
  workers[1]!.child.kill('SIGKILL');
  const fourth = spawnWorker();
  await fourth.waitFor(/serving casual/);
  await sleep(1_000);
  down.delete('K-');
  await sleep(400);
  third.child.kill('SIGKILL');
  const fifth = spawnWorker();
  await fifth.waitFor(/serving casual/);
  const statuses = await endsWithin(KEY_A, ids, 45_000);
  const notCompleted = ids.filter((id) => statuses.get(id) !== 'completed');
  // A call in flight when its worker is SIGKILLed is asked again by the run that resumes the task (a
  // step is at least once until its answer is written): twice at most, never a batch run again.
  const twice = prompts.filter((prompt) => (served.get(prompt) ?? 0) > 2);
  const never = prompts.filter((prompt) => !served.get(prompt));
  console.log(
    `30 waiting tasks, 3 SIGKILLs: ${notCompleted.length} not completed after 45 s (${notCompleted.map((id) => statuses.get(id)).join(',')}), ${twice.length} served more than twice (${twice.map((p) => `${p}x${served.get(p)}`).join(',')}), ${never.length} never served`,
  );
  expect(notCompleted).toEqual([]);
  expect(twice).toEqual([]);
}, 120_000);

it('runs the waiters soon after the endpoint is back when the worker making the try was SIGKILLed mid-call', async () => {
  down.add('H-');
  const prompts = Array.from({ length: 5 }, (_, index) => `H-${index}`);
  const ids = await submit(KEY_A, prompts);
  await Promise.all(ids.map((id) => waited(KEY_A, id)));
  // The one try of the tenant is in flight (the endpoint hangs 4 s, then 503): kill every worker.
  while (hanging.inFlight === 0) await sleep(20);
  for (const worker of workers) worker.child.kill('SIGKILL');
  const fresh = [spawnWorker(), spawnWorker()];
  await Promise.all(fresh.map((worker) => worker.waitFor(/serving casual/)));
  down.delete('H-');
  const backAt = Date.now();
  const statuses = await endsWithin(KEY_A, ids, 30_000);
  const open = ids.filter((id) => statuses.get(id) !== 'completed');
  console.log(
    `5 waiters, their try's worker SIGKILLed mid-call: ${open.length} not completed ${Date.now() - backAt} ms after the endpoint came back (${open.map((id) => statuses.get(id)).join(',')})`,
  );
  expect(open).toEqual([]);
}, 90_000);

it('never runs waiting tasks that were cancelled, and /v1/pools stops counting them', async () => {
  down.add('C-');
  const prompts = Array.from({ length: 12 }, (_, index) => `C-${index}`);
  const ids = await submit(KEY_A, prompts);
  await Promise.all(ids.map((id) => waited(KEY_A, id)));
  for (const id of ids) expect((await apiCall(baseUrl, KEY_A, 'POST', `/v1/tasks/${id}/cancel`)).status).toBe(202);
  down.delete('C-');
  await sleep(6_000);
  const ran = prompts.filter((prompt) => served.get(prompt));
  const pools = await apiCall<
    | Array<{ name: string; counts: Record<string, number> }>
    | { pools: Array<{ name: string; counts: Record<string, number> }> }
  >(baseUrl, KEY_OPS, 'GET', '/v1/pools');
  const list = Array.isArray(pools.body) ? pools.body : pools.body.pools;
  const casual = list.find((pool) => pool.name === 'casual')!;
  console.log(
    `12 waiting tasks cancelled: ${ran.length} reached the model after; casual counts ${JSON.stringify(casual.counts)}`,
  );
  expect(ran).toEqual([]);
  expect(casual.counts.delayed).toBe(0);
  expect(casual.counts.waiting).toBe(0);
}, 60_000);

it("fails a removed tenant's waiting tasks tenant_gone, never reaching the model", async () => {
  down.add('G-');
  const prompts = Array.from({ length: 6 }, (_, index) => `G-${index}`);
  const ids = await submit(KEY_GONE, prompts);
  await Promise.all(ids.map((id) => waited(KEY_GONE, id)));
  await Promise.all([api, ...workers].map((process) => process.stop('SIGTERM')));
  workers = [];
  const file = env.AGENTQ_CONFIG!;
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { tenants: Record<string, unknown> };
  delete settings.tenants.gone;
  writeFileSync(file, JSON.stringify(settings, null, 2));
  down.delete('G-');
  await startAll();
  const restartedAt = Date.now();
  const statuses = await endsWithin(KEY_OPS, ids, 20_000);
  const afterMs = Date.now() - restartedAt;
  const ran = prompts.filter((prompt) => served.get(prompt));
  const errors = await Promise.all(
    ids.map(
      async (id) =>
        (await apiCall<{ error: { code: string } | null }>(baseUrl, KEY_OPS, 'GET', `/v1/tasks/${id}`)).body.error
          ?.code,
    ),
  );
  console.log(
    `removed tenant's 6 waiting tasks, ${afterMs} ms after the restart: statuses ${[...statuses.values()].join(',')}, codes ${errors.join(',')}, ${ran.length} reached the model`,
  );
  expect(ran).toEqual([]);
  expect(errors.every((code) => code === 'tenant_gone')).toBe(true);
}, 600_000);

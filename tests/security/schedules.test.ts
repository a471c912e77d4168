/**
 * A tenant attacking through schedules, over HTTP, against a real API and worker process on a Redis of
 * their own prefix, the model being the wire double. A schedule stores a task (its files included) and
 * makes tasks for as long as it lives, so it passes the limits a submit does: its bytes count toward
 * the tenant's `limits.mb` and it holds room only up to `limits.schedules`; its list is paged and never
 * carries file contents; a tenant the configuration file no longer has makes no more tasks; an admin
 * sees and acts on every tenant's schedules, a tenant on its own alone.
 */
import type { ScheduleView, TaskSummaryView, UsageView } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv, type TestTenant } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { apiCall, type ApiAnswer } from '../helpers/api-call.js';

const MIB = 1024 * 1024;
const prefix = freshPrefix('schedules-attack');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
const BETA = `beta-${randomBytes(8).toString('hex')}`;
const ROOT = `root-${randomBytes(8).toString('hex')}`;
const GONE = `gone-${randomBytes(8).toString('hex')}`;
/** A 5 MiB file (the most a task may be given), its base64 starting with a marker the answers must not hold. */
const bigFile = (() => {
  const content = Buffer.alloc(5 * MIB, 'A');
  content.write('SCHEDULE-FILE-MARKER');
  return { path: 'data.txt', content: content.toString('base64') };
})();
const MARKER = bigFile.content.slice(0, 24);

const tenants: Record<string, TestTenant> = {
  acme: { keys: [ACME], limits: { mb: 20 } },
  beta: { keys: [BETA] },
  root: { keys: [ROOT], admin: true },
  gone: { keys: [GONE] },
};

let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess | undefined;
let worker: AgentqProcess | undefined;
let baseUrl: string;

/** Starts the API and a casual worker with these tenants in the configuration file. */
async function start(withTenants: Record<string, TestTenant>): Promise<void> {
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'schedules-attack',
    extra: tenantsEnv(withTenants),
  });
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'casual'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving casual/);
}

async function stop(): Promise<void> {
  await Promise.all([api, worker].map((process) => process?.stop('SIGKILL')));
}

beforeAll(async () => {
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-schedules-attack-'));
  await start(tenants);
}, 60_000);

afterAll(async () => {
  await stop();
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const call = <T = unknown>(key: string, method: string, url: string, body?: unknown) =>
  apiCall<T>(baseUrl, key, method, url, body);

type ApiErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };
type SchedulePage = { schedules: ScheduleView[]; nextCursor: string | null };

const writtenBytes = async (key: string) => (await call<UsageView>(key, 'GET', '/v1/usage')).body.writtenBytes;

/** Every page of a list, following `nextCursor`. */
async function allPages(key: string, query: string): Promise<{ pages: number; schedules: ScheduleView[] }> {
  const schedules: ScheduleView[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = query ? '&' : '';
    const page: ApiAnswer<SchedulePage> = await call<SchedulePage>(
      key,
      'GET',
      `/v1/schedules?${query}${cursor ? `${separator}cursor=${cursor}` : ''}`,
    );
    expect(page.status, page.text.slice(0, 300)).toBe(200);
    schedules.push(...page.body.schedules);
    cursor = page.body.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  return { pages, schedules };
}

describe('a tenant storing work through schedules', () => {
  it("counts a schedule's files toward limits.mb, refuses past it as a submit is, and gives the room back on delete", async () => {
    const before = await writtenBytes(ACME);
    const answers: Array<ApiAnswer<ScheduleView | ApiErrorBody>> = [];
    for (let index = 0; index < 10; index++)
      answers.push(
        await call(ACME, 'POST', '/v1/schedules', {
          every: 60_000,
          paused: true,
          task: { prompt: `hoard ${index}`, agent: 'casual', files: [bigFile] },
        }),
      );
    const statuses = answers.map((answer) => answer.status);
    const after = await writtenBytes(ACME);
    console.log(
      `10 paused schedules of 5 MiB each: statuses ${statuses.join(',')}; writtenBytes ${before} -> ${after}`,
    );
    // 20 MiB holds three of them (and what their records take), not four.
    expect(statuses).toEqual([201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
    expect(after - before).toBeGreaterThanOrEqual(3 * 5 * MIB);
    const refusal = answers[3]!;
    expect(refusal.headers.get('retry-after')).not.toBeNull();
    expect((refusal.body as ApiErrorBody).error).toMatchObject({
      code: 'limit_reached',
      details: { tenant: 'acme', writtenBytes: after, limitBytes: 20 * MIB },
    });
    expect((refusal.body as ApiErrorBody).error.message).toMatch(/tenants\.acme\.limits\.mb/);

    // The same file as a task now finds no room either: schedules and tasks share the tenant's bytes.
    const submit = await call<ApiErrorBody>(ACME, 'POST', '/v1/tasks', {
      tasks: [{ prompt: 'one more', agent: 'casual', files: [bigFile] }],
    });
    expect(submit.status).toBe(429);
    expect(submit.body.error.code).toBe('limit_reached');

    // Deleting one gives its bytes back: a schedule fits again.
    const first = answers[0]!.body as ScheduleView;
    expect((await call(ACME, 'DELETE', `/v1/schedules/${first.id}`)).status).toBe(204);
    const freed = await writtenBytes(ACME);
    expect(after - freed).toBeGreaterThanOrEqual(5 * MIB);
    const again = await call<ScheduleView>(ACME, 'POST', '/v1/schedules', {
      every: 60_000,
      paused: true,
      task: { prompt: 'hoard 0', agent: 'casual', files: [bigFile] },
    });
    expect(again.status).toBe(201);
    // The same schedule again: the same bytes as the one deleted.
    expect(await writtenBytes(ACME)).toBe(after);
  });

  it('lists schedules a page at a time, with file names and sizes and never their contents', async () => {
    const whole = await call<SchedulePage>(ACME, 'GET', '/v1/schedules');
    console.log(`GET /v1/schedules of 3 schedules with 5 MiB files: ${whole.text.length} bytes`);
    expect(whole.status).toBe(200);
    expect(whole.text.length).toBeLessThan(64 * 1024);
    expect(whole.text).not.toContain(MARKER);
    expect(whole.body.schedules).toHaveLength(3);
    for (const schedule of whole.body.schedules)
      expect(schedule.task.files).toEqual([{ path: 'data.txt', size: 5 * MIB }]);
    // One schedule's own answer carries no contents either.
    const one = await call<ScheduleView>(ACME, 'GET', `/v1/schedules/${whole.body.schedules[0]!.id}`);
    expect(one.status).toBe(200);
    expect(one.text).not.toContain(MARKER);

    const paged = await allPages(ACME, 'limit=2');
    expect(paged.pages).toBe(2);
    expect(paged.schedules.map((schedule) => schedule.id)).toEqual(whole.body.schedules.map((schedule) => schedule.id));
    const badLimit = await call<ApiErrorBody>(ACME, 'GET', '/v1/schedules?limit=100000');
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.message).toMatch(/limit/);
  });

  it("holds a tenant's schedules to a count, paused ones included", async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 101; index++)
      statuses.push(
        (
          await call(BETA, 'POST', '/v1/schedules', {
            every: 3_600_000,
            paused: true,
            task: { prompt: `count ${index}`, agent: 'casual' },
          })
        ).status,
      );
    const created = statuses.filter((status) => status === 201).length;
    console.log(`101 paused schedules of one tenant: ${created} created, then ${statuses.at(-1)}`);
    expect(created).toBe(100);
    const refusal = await call<ApiErrorBody>(BETA, 'POST', '/v1/schedules', {
      every: 3_600_000,
      task: { prompt: 'one too many', agent: 'casual' },
    });
    expect(refusal.status).toBe(429);
    expect(refusal.body.error).toMatchObject({ code: 'limit_reached', details: { tenant: 'beta', limit: 100 } });
    expect(refusal.body.error.message).toMatch(/tenants\.beta\.limits\.schedules/);
  });
});

describe("an admin and a tenant on other tenants' schedules", () => {
  it("lets an admin list (by tenant too), read, change and delete every tenant's", async () => {
    const everyone = await allPages(ROOT, 'limit=40');
    const byTenant = (tenant: string) => everyone.schedules.filter((schedule) => schedule.tenant === tenant).length;
    console.log(`an admin's GET /v1/schedules: acme ${byTenant('acme')}, beta ${byTenant('beta')}`);
    expect(byTenant('acme')).toBe(3);
    expect(byTenant('beta')).toBe(100);
    const betas = await allPages(ROOT, 'tenant=beta&limit=500');
    expect(betas.schedules).toHaveLength(100);
    expect(new Set(betas.schedules.map((schedule) => schedule.tenant))).toEqual(new Set(['beta']));

    const target = betas.schedules[0]!;
    expect((await call(ROOT, 'GET', `/v1/schedules/${target.id}`)).status).toBe(200);
    const changed = await call<ScheduleView>(ROOT, 'PATCH', `/v1/schedules/${target.id}`, { every: 7_200_000 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ tenant: 'beta', every: 7_200_000 });
    expect((await call(ROOT, 'DELETE', `/v1/schedules/${target.id}`)).status).toBe(204);
    expect((await call(BETA, 'GET', `/v1/schedules/${target.id}`)).status).toBe(404);
  });

  it("keeps a tenant out of another's schedules", async () => {
    const acmes = (await call<SchedulePage>(ACME, 'GET', '/v1/schedules')).body.schedules;
    const victim = acmes[0]!;
    expect((await call(BETA, 'GET', `/v1/schedules/${victim.id}`)).status).toBe(404);
    expect((await call(BETA, 'PATCH', `/v1/schedules/${victim.id}`, { paused: false })).status).toBe(404);
    expect((await call(BETA, 'DELETE', `/v1/schedules/${victim.id}`)).status).toBe(404);
    const listed = await call<ApiErrorBody>(BETA, 'GET', '/v1/schedules?tenant=acme');
    expect(listed.status).toBe(403);
    const own = await allPages(BETA, 'limit=500');
    expect(own.schedules.every((schedule) => schedule.tenant === 'beta')).toBe(true);
    expect((await call<ScheduleView>(ACME, 'GET', `/v1/schedules/${victim.id}`)).body.paused).toBe(true);
  });
});

describe('a tenant removed from the configuration file', () => {
  it('makes no more tasks: its schedules stop at their next firing and say why', async () => {
    const created = await call<ScheduleView>(GONE, 'POST', '/v1/schedules', {
      every: 1_000,
      task: { prompt: 'tick', agent: 'casual' },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const tasksOf = async () =>
      (await call<{ tasks: TaskSummaryView[] }>(ROOT, 'GET', '/v1/tasks?limit=500&fields=summary')).body.tasks.filter(
        (task) => task.scheduleId === id,
      ).length;
    await expect.poll(tasksOf, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);

    // The operator removes the tenant and restarts agentq.
    await stop();
    const { gone: _removed, ...remaining } = tenants;
    await start(remaining);
    const stopped = async () => (await call<ScheduleView>(ROOT, 'GET', `/v1/schedules/${id}`)).body;
    await expect.poll(async () => (await stopped()).paused, { timeout: 15_000 }).toBe(true);
    const schedule = await stopped();
    console.log(
      `a removed tenant's schedule: ${JSON.stringify({ paused: schedule.paused, pausedReason: schedule.pausedReason, lastRun: schedule.lastRuns[0] })}`,
    );
    expect(schedule.pausedReason).toMatch(/tenant gone is no longer in the configuration file/);
    expect(schedule.lastRuns[0]!.taskId).toBeNull();
    expect(schedule.lastRuns[0]!.skipped).toMatch(/tenant gone is no longer in the configuration file/);
    expect(schedule.nextRunAt).toBeNull();
    const made = await tasksOf();
    // Its timer is gone: three periods later, still no new task and no new run.
    const runs = schedule.lastRuns.length;
    const deadline = Date.now() + 3_000;
    await expect
      .poll(async () => Date.now() > deadline && (await stopped()).lastRuns.length === runs, { timeout: 10_000 })
      .toBe(true);
    expect(await tasksOf()).toBe(made);
    // An admin sees it among the tenant's, and cannot resume it while the tenant is away.
    const listed = await allPages(ROOT, 'tenant=gone');
    expect(listed.schedules.map((each) => each.id)).toEqual([id]);
    const resumed = await call<ApiErrorBody>(ROOT, 'PATCH', `/v1/schedules/${id}`, { paused: false });
    expect(resumed.status).toBe(409);
    expect(resumed.body.error.message).toMatch(/tenant gone is no longer in the configuration file/);
    expect((await call(ROOT, 'DELETE', `/v1/schedules/${id}`)).status).toBe(204);
  }, 60_000);
});

/**
 * A schedule is two things in Redis: its record (what the API answers) and its timer (BullMQ's job
 * scheduler, which fires it). A tenant changes the record at will, many requests at once, while it
 * fires; a process may die between writing one and the other. The timer must follow the record: a
 * paused or deleted schedule never fires again, a changed one fires on its new timing only, and at
 * start every timer is made what its record says (one without a record removed, a record without one
 * given one). Against a real API and worker processes on a Redis of their own prefix, the model being
 * the wire double; the "crashes" are the states they leave, written to the timers' queue directly.
 */
import type { ScheduleView, TaskSummaryView } from '@agentq/contract';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { ScheduleTimers } from '@agentq/scheduling';
import { createKeys } from '@agentq/store';
import { tenantsEnv, type TestTenant } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { apiCall } from '../helpers/api-call.js';

const prefix = freshPrefix('schedule-timers');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
const tenants: Record<string, TestTenant> = { acme: { keys: [ACME] } };
/** A timing that does not fire while the test runs: midnight on the first of January. */
const YEARLY = '0 0 1 1 *';

let double: OpenAIDouble;
let dataDir: string;
let processes: AgentqProcess[] = [];
let baseUrl: string;
let connection: Redis;
/** The timers' queue, as agentq's processes use it: where the tests read timers and leave crashed states. */
let timers: ScheduleTimers;

async function start(): Promise<void> {
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'schedule-timers',
    extra: tenantsEnv(tenants),
  });
  const api = spawnAgentq(['api'], env);
  const worker = spawnAgentq(['worker', '--pools', 'casual'], env);
  processes = [api, worker];
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/serving casual/);
}

async function stop(): Promise<void> {
  await Promise.all(processes.map((process) => process.stop('SIGKILL')));
}

beforeAll(async () => {
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'done' } }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-schedule-timers-'));
  connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  timers = new ScheduleTimers({ connection, keys: createKeys(prefix) });
  await start();
}, 60_000);

afterAll(async () => {
  await stop();
  await timers?.close();
  connection?.disconnect();
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const call = <T>(method: string, url: string, body?: unknown) => apiCall<T>(baseUrl, ACME, method, url, body);

async function create(body: Record<string, unknown>): Promise<ScheduleView> {
  const created = await call<ScheduleView>('POST', '/v1/schedules', {
    ...body,
    task: { prompt: `tick ${randomUUID()}`, agent: 'casual' },
  });
  expect(created.status).toBe(201);
  return created.body;
}

const schedule = async (id: string) => (await call<ScheduleView>('GET', `/v1/schedules/${id}`)).body;
const runsOf = async (id: string) => (await schedule(id)).lastRuns;
/** How many tasks a schedule made, as the task list shows them (a deleted schedule's too). */
async function tasksOf(id: string): Promise<TaskSummaryView[]> {
  const { body } = await call<{ tasks: TaskSummaryView[] }>('GET', '/v1/tasks?limit=500&fields=summary');
  return body.tasks.filter((task) => task.scheduleId === id);
}
/** Waits until `ms` have passed, then answers `read()`: how a count stands after some periods. */
async function after<T>(ms: number, read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + ms;
  await expect.poll(() => Date.now() >= deadline, { timeout: ms + 5_000, interval: 100 }).toBe(true);
  return read();
}

describe('a schedule changed while it fires', () => {
  it('stays paused when the pause comes with other changes at once, and never fires again', async () => {
    const { id } = await create({ every: 1_000, overlap: 'allow' });
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    // Rounds of one pause among changes of other fields, all sent at once: each change is read before
    // the others are written. Between rounds, a resume.
    const outcomes: string[] = [];
    for (let round = 0; round < 5; round++) {
      const changes: Array<Record<string, unknown>> = Array.from({ length: 12 }, (_, index) =>
        index % 2 ? { overlap: 'skip' } : { every: 1_000 },
      );
      changes.splice(round * 2, 0, { paused: true });
      const answers = await Promise.all(changes.map((change) => call('PATCH', `/v1/schedules/${id}`, change)));
      // A change that lost to the others ten times in a row is a 409 that says to send it again (a loaded
      // machine may see one): sent again, as a client would.
      for (const [index, answer] of answers.entries()) {
        if (answer.status !== 409) continue;
        expect(JSON.stringify(answer.body)).toMatch(/changed by other requests each time .*send it again/);
        answers[index] = await call('PATCH', `/v1/schedules/${id}`, changes[index]);
      }
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
      const state = await schedule(id);
      const timer = await timers.queue.getJobScheduler(id);
      outcomes.push(`paused ${state.paused}, nextRunAt ${state.nextRunAt}, timer ${timer ? 'set' : 'none'}`);
      if (round < 4) expect((await call('PATCH', `/v1/schedules/${id}`, { paused: false })).status).toBe(200);
    }
    console.log(`a pause among 12 other changes, 5 rounds:\n${outcomes.join('\n')}`);
    expect(outcomes).toEqual(outcomes.map(() => 'paused true, nextRunAt null, timer none'));
    // Three periods later: no run, no task (a firing under way at the pause may end its task).
    const made = (await tasksOf(id)).length;
    const runs = (await runsOf(id)).length;
    expect(await after(3_000, async () => (await runsOf(id)).length)).toBe(runs);
    expect((await tasksOf(id)).length).toBeLessThanOrEqual(made + 1);
  }, 90_000);

  it('fires on its new timing only, once changed', async () => {
    const { id } = await create({ every: 1_000, overlap: 'allow' });
    await expect.poll(async () => (await runsOf(id)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    const changed = await call<ScheduleView>('PATCH', `/v1/schedules/${id}`, { cron: YEARLY });
    const changedAt = Date.now();
    expect(changed.status).toBe(200);
    expect(new Date(changed.body.nextRunAt!).getUTCMonth()).toBe(0);
    // No firing due after the change: the old timing is gone.
    const late = await after(3_000, async () => (await runsOf(id)).filter((run) => Date.parse(run.at) > changedAt));
    expect(late).toEqual([]);
    expect((await timers.queue.getJobScheduler(id))?.pattern).toBe(YEARLY);
  }, 60_000);

  it('makes no more tasks once deleted, whatever was firing around the delete', async () => {
    const { id } = await create({ every: 1_000, overlap: 'allow' });
    await expect.poll(async () => (await tasksOf(id)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    expect((await call('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
    // A firing under way at the delete may end its task within the period; after it, nothing.
    const settled = await after(1_000, async () => (await tasksOf(id)).length);
    expect(await after(3_000, async () => (await tasksOf(id)).length)).toBe(settled);
    expect(await timers.queue.getJobScheduler(id)).toBeUndefined();
  }, 60_000);
});

describe('timers reconciled with records at start', () => {
  it('gives a record without a timer one, and removes a timer without a record, of a paused one, or of an old timing', async () => {
    // The states a process killed between writing a record and its timer leaves behind:
    // a schedule whose timer was never written,
    const lost = await create({ every: 1_000, overlap: 'allow' });
    await timers.queue.removeJobScheduler(lost.id);
    // a timer whose schedule was deleted,
    const ghost = `sch_${randomUUID()}`;
    await timers.set(ghost, { every: 1_000 });
    // a paused schedule's timer, and the timer of a schedule's timing before its change.
    const paused = await create({ every: 1_000, paused: true });
    await timers.set(paused.id, { every: 1_000 });
    const retimed = await create({ cron: YEARLY });
    await timers.set(retimed.id, { every: 1_000 });

    // (what the lost one fired before its timer went, settled)
    const lostRuns = await after(1_000, async () => (await runsOf(lost.id)).length);
    // agentq restarts.
    await stop();
    await start();
    await expect.poll(async () => (await runsOf(lost.id)).length, { timeout: 15_000 }).toBeGreaterThan(lostRuns);
    expect((await schedule(lost.id)).nextRunAt).not.toBeNull();
    const state = {
      ghost: await timers.queue.getJobScheduler(ghost),
      paused: await timers.queue.getJobScheduler(paused.id),
      retimed: (await timers.queue.getJobScheduler(retimed.id))?.pattern,
    };
    console.log(`after a restart: ${JSON.stringify(state)}`);
    expect(state).toEqual({ ghost: undefined, paused: undefined, retimed: YEARLY });
    // None of the three fired: no run of the paused or retimed schedule in three periods.
    expect(await after(3_000, async () => [...(await runsOf(paused.id)), ...(await runsOf(retimed.id))])).toEqual([]);
  }, 90_000);
});

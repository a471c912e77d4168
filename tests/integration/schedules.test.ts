/**
 * Schedules through the real API and worker, fired by BullMQ's job schedulers: a task every two
 * seconds until the schedule is deleted and none after, overlap skipped and said, pause and resume,
 * cron with a time zone, a tenant's own schedules only, a schedule's bytes counted toward its tenant's
 * limits.mb (in 4 cells too), and every bad input said with its place.
 */
import type { ScheduleView, TaskSummaryView, UsageView } from '@agentq/contract';
import { CronExpressionParser } from 'cron-parser';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { tenantsEnv } from '../helpers/config-file.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { apiCall } from '../helpers/api-call.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const call = <T>(method: string, path: string, body?: unknown, key?: string) =>
  apiCall<T>(stack!.api.url, key, method, path, body);

/** The tasks a schedule submitted, as the task list shows them. */
async function tasksOf(scheduleId: string): Promise<TaskSummaryView[]> {
  const { body } = await getJson<{ tasks: TaskSummaryView[] }>(`${stack!.api.url}/v1/tasks?limit=500&fields=summary`);
  return body.tasks.filter((task) => task.scheduleId === scheduleId);
}

describe('schedules', () => {
  it('submits its task about every two seconds until deleted, and none after', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'tick' } }] });
    const created = await call<ScheduleView>('POST', '/v1/schedules', {
      every: 2000,
      task: { prompt: 'tick', agent: 'casual', metadata: { from: 'schedule' } },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.body).toMatchObject({ every: 2000, cron: null, overlap: 'skip', paused: false });
    expect(created.body.nextRunAt).not.toBeNull();

    const runs = async () => (await call<ScheduleView>('GET', `/v1/schedules/${id}`)).body.lastRuns;
    await expect
      .poll(async () => (await runs()).filter((run) => run.taskId).length, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(3);
    const made = (await runs()).filter((run) => run.taskId).reverse();
    const gaps = made.slice(1).map((run, index) => Date.parse(run.at) - Date.parse(made[index]!.at));
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(1_500);
      expect(gap).toBeLessThan(3_000);
    }
    const tasks = await tasksOf(id);
    expect(tasks.map((task) => task.id).sort()).toEqual(expect.arrayContaining(made.map((run) => run.taskId!).sort()));
    expect(tasks[0]).toMatchObject({ prompt: 'tick', agent: 'casual', metadata: { from: 'schedule' }, scheduleId: id });

    expect((await call('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
    const after = (await tasksOf(id)).length;
    // Two periods and more with no schedule: no task is added.
    await sleep(4_500);
    expect((await tasksOf(id)).length).toBe(after);
    expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(404);
    expect((await call<{ schedules: unknown[] }>('GET', '/v1/schedules')).body.schedules).toEqual([]);
  });

  it('skips a run while the last one has not ended, and says so', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'slow', delayMs: 3_000 } }] });
    const { body: created } = await call<ScheduleView>('POST', '/v1/schedules', {
      every: 1000,
      task: { prompt: 'slow', agent: 'casual' },
    });
    await expect
      .poll(
        async () =>
          (await call<ScheduleView>('GET', `/v1/schedules/${created.id}`)).body.lastRuns.find((run) => run.skipped),
        {
          timeout: 10_000,
        },
      )
      .toMatchObject({ taskId: null, skipped: expect.stringMatching(/is (queued|running).*overlap: skip/) });
    await call('DELETE', `/v1/schedules/${created.id}`);
  });

  it("holds each run to its tenant's limits: a run past them is skipped, and says why", async () => {
    stack = await startStack({
      rules: [{ reply: { content: 'slow', delayMs: 4_000 } }],
      env: tenantsEnv({ acme: { keys: ['acme-key'], limits: { unfinished: 1 } } }),
    });
    const { body: created } = await call<ScheduleView>(
      'POST',
      '/v1/schedules',
      { every: 1000, overlap: 'allow', task: { prompt: 'slow', agent: 'casual' } },
      'acme-key',
    );
    const skipped = async () =>
      (await call<ScheduleView>('GET', `/v1/schedules/${created.id}`, undefined, 'acme-key')).body.lastRuns.find(
        (run) => run.skipped,
      );
    await expect
      .poll(skipped, { timeout: 10_000 })
      .toMatchObject({ taskId: null, skipped: expect.stringMatching(/unfinished|limit/) });
    await call('DELETE', `/v1/schedules/${created.id}`, undefined, 'acme-key');
  });

  it("counts a schedule's task and files toward its tenant's bytes, also when its task changes", async () => {
    stack = await startStack({
      pools: [],
      env: tenantsEnv({ acme: { keys: ['acme-key'], limits: { mb: 0.1 } } }),
    });
    const written = async () => (await call<UsageView>('GET', '/v1/usage', undefined, 'acme-key')).body.writtenBytes;
    const file = (bytes: number) => [{ path: 'in.txt', content: Buffer.alloc(bytes, 'x').toString('base64') }];
    const make = (bytes: number) =>
      call<ScheduleView>(
        'POST',
        '/v1/schedules',
        { every: 60_000, paused: true, task: { prompt: 'p', agent: 'casual', files: file(bytes) } },
        'acme-key',
      );
    const first = await make(40_000);
    expect(first.status).toBe(201);
    expect(first.body.task.files).toEqual([{ path: 'in.txt', size: 40_000 }]);
    const one = await written();
    expect(one).toBeGreaterThan(40_000);
    // 0.1 MiB: a second of 40 kB fits, a third does not.
    expect((await make(40_000)).status).toBe(201);
    const refused = await make(40_000);
    expect(refused.status).toBe(429);
    expect(await written()).toBe(2 * one);
    // A change that grows its files is held to the room too; one that shrinks them gives bytes back.
    const grown = await call(
      'PATCH',
      `/v1/schedules/${first.body.id}`,
      { task: { prompt: 'p', agent: 'casual', files: file(60_000) } },
      'acme-key',
    );
    expect(grown.status).toBe(429);
    const shrunk = await call<ScheduleView>(
      'PATCH',
      `/v1/schedules/${first.body.id}`,
      { task: { prompt: 'p', agent: 'casual', files: file(10_000) } },
      'acme-key',
    );
    expect(shrunk.status).toBe(200);
    expect(await written()).toBe(2 * one - 30_000);
    expect((await call('DELETE', `/v1/schedules/${first.body.id}`, undefined, 'acme-key')).status).toBe(204);
    expect(await written()).toBe(one);
  });

  it('pauses and resumes, runs a cron in its time zone, and keeps tenants apart', async () => {
    stack = await startStack({
      pools: [],
      env: tenantsEnv({ acme: { keys: ['acme-key'] }, other: { keys: ['other-key'] } }),
    });
    const { body: created } = await call<ScheduleView>(
      'POST',
      '/v1/schedules',
      { cron: '0 9 * * 1', timezone: 'Europe/Paris', task: { prompt: 'weekly report', agent: 'casual' } },
      'acme-key',
    );
    expect(created).toMatchObject({ cron: '0 9 * * 1', timezone: 'Europe/Paris', every: null, tenant: 'acme' });
    const expected = CronExpressionParser.parse('0 9 * * 1', { tz: 'Europe/Paris' }).next().toISOString();
    expect(created.nextRunAt).toBe(expected);

    const paused = await call<ScheduleView>('PATCH', `/v1/schedules/${created.id}`, { paused: true }, 'acme-key');
    expect(paused.body).toMatchObject({ paused: true, nextRunAt: null });
    const resumed = await call<ScheduleView>('PATCH', `/v1/schedules/${created.id}`, { paused: false }, 'acme-key');
    expect(resumed.body).toMatchObject({ paused: false, nextRunAt: expected });
    const retimed = await call<ScheduleView>('PATCH', `/v1/schedules/${created.id}`, { every: 60_000 }, 'acme-key');
    expect(retimed.body).toMatchObject({ every: 60_000, cron: null, timezone: null });

    expect((await call('GET', `/v1/schedules/${created.id}`, undefined, 'other-key')).status).toBe(404);
    expect((await call('DELETE', `/v1/schedules/${created.id}`, undefined, 'other-key')).status).toBe(404);
    expect(
      (await call<{ schedules: unknown[] }>('GET', '/v1/schedules', undefined, 'other-key')).body.schedules,
    ).toEqual([]);
    expect(
      (await call<{ schedules: ScheduleView[] }>('GET', '/v1/schedules', undefined, 'acme-key')).body.schedules.map(
        (schedule) => schedule.id,
      ),
    ).toEqual([created.id]);
    expect((await call('DELETE', `/v1/schedules/${created.id}`, undefined, 'acme-key')).status).toBe(204);
  });

  it('says what is wrong with a schedule, field by field', async () => {
    stack = await startStack({ pools: [] });
    const task = { prompt: 'x', agent: 'casual' };
    const cases: Array<[unknown, string, RegExp]> = [
      [{ cron: 'every day', task }, 'cron', /not a cron pattern/],
      [{ cron: '* * * * *', every: 5000, task }, 'every', /not both/],
      [{ task }, 'cron', /give "cron".*or "every"/],
      [{ every: 10, task }, 'every', /at least 1000/],
      [{ cron: '0 9 * * *', timezone: 'Mars/Olympus', task }, 'timezone', /not an IANA time zone/],
      [{ every: 5000, timezone: 'UTC', task }, 'timezone', /for "cron" only/],
      [{ every: 5000, task: { prompt: 'x', agent: 'nosuch' } }, 'task.agent', /not an agent of this install/],
      [{ every: 5000, task: { agent: 'casual' } }, 'task.prompt', /.+/],
      [{ every: 5000, task, when: 'now' }, '', /unknown field "when"/],
    ];
    for (const [body, path, message] of cases) {
      const answer = await call<{ error: { details: Array<{ path: string; message: string }> } }>(
        'POST',
        '/v1/schedules',
        body,
      );
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.details, JSON.stringify(body)).toEqual([
        { path, message: expect.stringMatching(message) },
      ]);
    }
    expect((await call('GET', '/v1/schedules/sch_nope')).status).toBe(404);
  });
});

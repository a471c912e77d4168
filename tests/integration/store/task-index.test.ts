/** The task lists with the status in the score, against a real Redis: pages across statuses, counts, and the move of an earlier version's lists. */
import { describe, expect, it } from 'vitest';
import type { TaskListView } from '@agentq/contract';
import { deletePrefix, freshPrefix } from '../../helpers/redis.js';
import {
  createKeys,
  countByStatus,
  countUnfinished,
  indexScore,
  moveTaskLists,
  newestInIndex,
  TaskStore,
} from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { storeOnPrefix } from '../../helpers/store-on-prefix.js';

const { prefix, keys, store, transitions } = storeOnPrefix('index');

describe('the task lists', () => {
  it('page newest first across every status, by the same cursor, and count each status', async () => {
    const tenant = 'pages';
    const submitted = await transitions.submit(
      Array.from({ length: 7 }, (_, index) => ({ prompt: `p${index}`, agent: 'casual' as const })),
      { tenant },
    );
    // Some of them move on: a status of every kind the pages cross.
    const [a, b, c, d] = submitted.map((task) => ({ id: task.id, tenant, listed: true }));
    await transitions.claim(a!, { runToken: 'r' });
    await transitions.claim(b!, { runToken: 'r' });
    await transitions.complete(b!, { runToken: 'r', result: 'ok' });
    await transitions.fail(c!, { from: ['queued'], error: { code: 'error', message: 'no' } });
    await transitions.cancel(d!, { from: ['queued'], reason: 'test' });

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ tenant, limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.tasks.map((task) => task.prompt));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1', 'p0']);
    expect((await store.list({ tenant, status: 'queued', limit: 10 })).tasks.map((task) => task.prompt)).toEqual([
      'p6',
      'p5',
      'p4',
    ]);
    expect((await store.list({ tenant, status: 'completed', limit: 10 })).tasks.map((task) => task.prompt)).toEqual([
      'p1',
    ]);
    expect(await countByStatus(store.redis, keys.cells[0]!.tenantTasks(tenant))).toEqual({
      pending: 0,
      queued: 3,
      running: 1,
      waiting: 0,
      completed: 1,
      failed: 1,
      skipped: 0,
      cancelled: 1,
    });
    expect(await countUnfinished(store.redis, keys.cells[0]!.tenantTasks(tenant))).toBe(4);
    // Every tenant's list (an admin's) merges the tenants' lists by order, and counts them all.
    const [other] = await transitions.submit([{ prompt: 'another tenant', agent: 'casual' }], { tenant: 'other' });
    await store.commit({ taskId: other!.id, tenant: 'other', status: 'failed' });
    const everyTenant = await store.indexesOf();
    expect(everyTenant).toEqual(
      expect.arrayContaining([keys.cells[0]!.tenantTasks(tenant), keys.cells[0]!.tenantTasks('other')]),
    );
    expect(
      (await newestInIndex(store.redis, everyTenant, { statuses: ['failed', 'cancelled'], count: 5 })).map(
        (entry) => entry.id,
      ),
    ).toEqual([other!.id, d!.id, c!.id]);
    expect(
      (await newestInIndex(store.redis, everyTenant, { statuses: ['failed', 'cancelled'], count: 2 })).map(
        (entry) => entry.id,
      ),
    ).toEqual([other!.id, d!.id]);
    expect((await store.countByStatus()).failed).toBe((await store.countByStatus(tenant)).failed + 1);
    const first = await store.list({ limit: 2 });
    expect(first.tasks.map((task) => task.prompt)).toEqual(['another tenant', 'p6']);
    const next = await store.list({ limit: 2, cursor: first.nextCursor! });
    expect(next.tasks.map((task) => task.prompt)).toEqual(['p5', 'p4']);
  });

  it('a search and a batch filtered by status page through every match, reading prompts in Redis only', async () => {
    const tenant = 'search';
    // 450 tasks: more than one page of the list (200) between two matches' pages.
    const promptOf = (index: number) => (index % 7 === 0 ? `Report ${index}` : `other ${index}`);
    const submitted = await transitions.submit(
      Array.from({ length: 450 }, (_, index) => ({ prompt: promptOf(index), agent: 'casual' as const })),
      { tenant, batch: 'nightly' },
    );
    for (const [index, task] of submitted.entries()) {
      if (index % 50 === 0)
        await transitions.fail(
          { id: task.id, tenant, listed: true },
          { from: ['queued'], error: { code: 'error', message: 'no' } },
        );
    }
    const pages = async (options: { q?: string; status?: 'failed'; batch?: string }) => {
      const prompts: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.list({ tenant, limit: 10, ...options, ...(cursor ? { cursor } : {}) });
        expect(page.tasks.length).toBeLessThanOrEqual(10);
        prompts.push(...page.tasks.map((task) => task.prompt));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return prompts;
    };
    const newestFirst = (test: (index: number) => boolean) =>
      submitted
        .map((_, index) => index)
        .filter(test)
        .reverse()
        .map(promptOf);
    expect(await pages({ q: 'report' })).toEqual(newestFirst((index) => index % 7 === 0));
    expect(await pages({ batch: 'nightly', status: 'failed' })).toEqual(newestFirst((index) => index % 50 === 0));
    expect(await pages({ batch: 'nightly', status: 'failed', q: 'report' })).toEqual(
      newestFirst((index) => index % 350 === 0),
    );

    // Under MONITOR: the scanned tasks are matched by a script, and the 10 returned read as rows by
    // another: no command of the API's own reads a task's fields (a prompt never leaves Redis whole);
    // it asks their prompts' sizes only.
    const monitor = await store.redis.duplicate().monitor();
    const commands: Array<{ command: string; source: string }> = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[1]?.startsWith(`${prefix}:task:`))
        commands.push({ command: `${args[0]!.toLowerCase()} ${args.slice(2).join(' ')}`.trim(), source });
    });
    const page = await store.list({ tenant, limit: 10, q: 'report 1' });
    // What MONITOR shows comes in order: once it shows this, it showed every command of the search.
    const marker = `${prefix}:searched`;
    const seen = new Promise<void>((resolve) =>
      monitor.on('monitor', (_time: string, args: string[]) => args[1] === marker && resolve()),
    );
    await store.redis.echo(marker);
    await seen;
    monitor.disconnect();
    expect(page.tasks.map((task) => task.prompt)).toEqual(
      newestFirst((index) => index % 7 === 0 && String(index).startsWith('1')).slice(0, 10),
    );
    expect(commands.length).toBeGreaterThan(10);
    // The API's own commands ask each prompt's size (the search's byte budget), never its text.
    expect(commands.filter(({ source, command }) => source !== 'lua' && command !== 'hstrlen prompt')).toEqual([]);
    expect(
      commands.filter(({ source, command }) => source === 'lua' && !/^(hget prompt|hmget )/.test(command)),
    ).toEqual([]);
  });

  it('a summary list is the full one without results, and reads no result from Redis; a list row cuts prompt and result', async () => {
    const tenant = 'summaries';
    const submitted = await transitions.submit(
      Array.from({ length: 4 }, (_, index) => ({ prompt: `s${index}`, agent: 'casual' as const, metadata: { index } })),
      { tenant },
    );
    for (const task of submitted.slice(0, 2)) {
      const ref = { id: task.id, tenant, listed: true };
      await transitions.claim(ref, { runToken: 'r' });
      await transitions.complete(ref, { runToken: 'r', result: 'a long answer '.repeat(10_000) });
    }
    const monitor = await store.redis.duplicate().monitor();
    const commands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[1]?.startsWith(`${prefix}:task:`)) commands.push(args);
    });
    const summaries = await store.list({ tenant, limit: 10, summary: true });
    const marker = `${prefix}:listed`;
    const seen = new Promise<void>((resolve) =>
      monitor.on('monitor', (_time: string, args: string[]) => args[1] === marker && resolve()),
    );
    await store.redis.echo(marker);
    await seen;
    monitor.disconnect();
    const full = await store.list({ tenant, limit: 10 });
    // A result is its first 1,024 bytes in a list (the task's own view has it whole).
    expect(full.tasks.map((task) => ('result' in task ? (task.result?.length ?? null) : 'none'))).toEqual([
      null,
      null,
      1024,
      1024,
    ]);
    expect(full.tasks.map((task) => task.truncated)).toEqual([false, false, true, true]);
    expect((await store.get(submitted[0]!.id))?.result).toHaveLength(140_000);
    // A summary's `truncated` is its prompt's alone (it has no result).
    expect(summaries.tasks.map(({ truncated: _cut, ...summary }) => summary)).toEqual(
      (full.tasks as TaskListView[]).map(({ result: _result, truncated: _cut, ...summary }) => summary),
    );
    expect(summaries.tasks.map((task) => task.truncated)).toEqual([false, false, false, false]);
    expect(summaries.nextCursor).toBe(full.nextCursor);
    expect(commands.map(([name]) => name!.toLowerCase())).toEqual(['hmget', 'hmget', 'hmget', 'hmget']);
    expect(commands.flat()).not.toContain('result');
  });

  it('take in the lists of an earlier version, each task in the status its record holds now, and do it once', async () => {
    const redis = store.redis;
    const old = createKeys(freshPrefix('index-old'));
    const tasks = await new Transitions(new TaskStore(redis, old)).submit(
      [1, 2, 3].map((index) => ({ prompt: `old ${index}`, agent: 'casual' as const })),
      { tenant: 'acme' },
    );
    const orders = await Promise.all(tasks.map(async (task) => Number(await redis.hget(old.task(task.id), 'order'))));
    const [first, second, third] = tasks.map((task) => task.id);
    // As the earlier version kept them: a sorted set of every status per scope, one per status and scope, scored by order.
    const oldEveryTenant = `${old.prefix}:tasks:index`;
    await redis.del(oldEveryTenant, old.cells[0]!.tenantTasks('acme'));
    for (const key of [`${old.prefix}:tasks`, `${old.prefix}:tenant:acme:tasks`])
      await redis.zadd(key, orders[0]!, first!, orders[1]!, second!, orders[2]!, third!);
    await redis.zadd(`${old.prefix}:tasks:status:completed`, orders[0]!, first!, orders[1]!, second!);
    await redis.zadd(`${old.prefix}:tenant:acme:tasks:status:queued`, orders[2]!, third!);
    await redis.hset(old.task(first!), 'status', 'completed');
    await redis.hset(old.task(second!), 'status', 'completed');
    // The third moved on since (its record says running), and this version's list still has it queued.
    await redis.hset(old.task(third!), 'status', 'running');
    await redis.zadd(oldEveryTenant, indexScore('queued', orders[2]!), third!);

    expect(await moveTaskLists(redis, old)).toBe(6);
    for (const index of [oldEveryTenant, old.cells[0]!.tenantTasks('acme')])
      expect(await countByStatus(redis, index)).toMatchObject({ completed: 2, queued: 0, running: 1 });
    expect(
      (await new TaskStore(redis, old).list({ tenant: 'acme', limit: 10 })).tasks.map((task) => task.prompt),
    ).toEqual(['old 3', 'old 2', 'old 1']);
    expect(
      await redis.exists(
        `${old.prefix}:tasks:status:completed`,
        `${old.prefix}:tenant:acme:tasks:status:queued`,
        `${old.prefix}:tasks`,
        `${old.prefix}:tenant:acme:tasks`,
      ),
    ).toBe(0);
    expect(await moveTaskLists(redis, old)).toBe(0);
    // A process of the earlier version, still running, fails the third task: its sets of that version
    // come back, and the next start puts the task in its new status.
    await redis.hset(old.task(third!), 'status', 'failed');
    await redis.zadd(`${old.prefix}:tasks:status:failed`, orders[2]!, third!);
    await redis.zadd(`${old.prefix}:tenant:acme:tasks:status:failed`, orders[2]!, third!);
    expect(await moveTaskLists(redis, old)).toBe(2);
    for (const index of [oldEveryTenant, old.cells[0]!.tenantTasks('acme')])
      expect(await countByStatus(redis, index)).toMatchObject({ completed: 2, running: 0, failed: 1 });
    expect(
      await redis.exists(`${old.prefix}:tasks:status:failed`, `${old.prefix}:tenant:acme:tasks:status:failed`),
    ).toBe(0);
    await deletePrefix(old.prefix);
  });
});

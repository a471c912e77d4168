/**
 * A tenant's limits when its tasks are in several cells (docs/DESIGN.md, "Cells"): a commit counts what
 * the tenant's tasks hold in the other cells (tenant-totals.ts), a submit's room counts every cell and
 * every other submit's hold (cell-room.ts), usage adds up the cells, and a cell count never changes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';
import {
  CellCountChangedError,
  connectRedis,
  createKeys,
  migrateStorage,
  newTaskId,
  NoRoomError,
  TaskStore,
  tenantUsage,
  type Keys,
} from '@agentq/store';
import { Transitions } from '@agentq/tasks';

const prefixes: string[] = [];
const stores: TaskStore[] = [];
afterAll(async () => {
  for (const store of stores) store.redis.disconnect();
  for (const prefix of prefixes) await deletePrefix(prefix);
});

function storeOf(options: ConstructorParameters<typeof TaskStore>[2] = {}, cells = 4): TaskStore {
  const prefix = freshPrefix('cells');
  prefixes.push(prefix);
  const store = new TaskStore(connectRedis({ url: redisUrl() }), createKeys(prefix, cells), options);
  stores.push(store);
  return store;
}

/** A running task of `tenant` in cell `cell`. */
async function runningIn(store: TaskStore, cell: number, tenant = 'acme') {
  const transitions = new Transitions(store);
  const id = newTaskId(store.keys, store.keys.cells[cell]);
  await store.create([
    {
      fields: { id, rootId: id, tenant, agent: 'casual', prompt: 'p', status: 'queued', memory: '0' },
      listed: { tenant },
    },
  ]);
  const record = (await store.getRecord(id))!;
  await transitions.claim(record, { runToken: `run-${id}` });
  return { id, runToken: `run-${id}` };
}

describe('cells', () => {
  it("stops a tenant's run past its byte limit when its tasks wrote it in other cells", async () => {
    const options = { tenantMaxBytes: { acme: 20_000 } };
    const store = storeOf(options);
    const first = await runningIn(store, 0);
    const second = await runningIn(store, 2);
    const write = (on: TaskStore, task: { id: string; runToken: string }, bytes: number) =>
      on.commit({
        taskId: task.id,
        tenant: 'acme',
        runToken: task.runToken,
        events: [{ type: 'reasoning', data: { text: 'x'.repeat(bytes) } }],
      });
    expect((await write(store, first, 12_000)).stop).toBeUndefined();
    // Another process: 12,000 in cell 0 and 9,000 here are past 20,000 in all, though not in this cell.
    const elsewhere = new TaskStore(connectRedis({ url: redisUrl() }), store.keys, options);
    stores.push(elsewhere);
    expect((await write(elsewhere, second, 9_000)).stop).toBe('tenant_bytes');
    // This process read the other cells before cell 0's write: it sees it within about a second.
    await expect
      .poll(async () => (await write(store, second, 10)).stop, { interval: 100, timeout: 3_000 })
      .toBe('tenant_bytes');
    expect((await tenantUsage(store, 'acme', { unfinished: 100, stored: 100 })).writtenBytes).toBeGreaterThan(21_000);
  });

  it("stops a tenant's run past its daily limit when it spent it in other cells", async () => {
    const options = { tenantLimits: { acme: { tokens: 1_000 } } };
    const store = storeOf(options);
    const first = await runningIn(store, 1);
    const second = await runningIn(store, 3);
    const spend = (on: TaskStore, task: { id: string; runToken: string }, tokens: number) =>
      on.commit({
        taskId: task.id,
        tenant: 'acme',
        runToken: task.runToken,
        usage: { promptTokens: tokens, completionTokens: 0 },
      });
    expect((await spend(store, first, 700)).stop).toBeUndefined();
    const elsewhere = new TaskStore(connectRedis({ url: redisUrl() }), store.keys, options);
    stores.push(elsewhere);
    expect((await spend(elsewhere, second, 400)).stop).toBe('tenant_limit');
  });

  it("holds a tenant's submits at once to its room across the cells, and lets each hold go", async () => {
    const store = storeOf();
    const transitions = new Transitions(store);
    const room = { limits: { unfinished: 6, stored: 100 } };
    const submit = (count: number) =>
      transitions.submit(
        Array.from({ length: count }, (_, index) => ({ prompt: `t${index}`, agent: 'casual' as const })),
        { tenant: 'acme', room },
      );
    // Ten submits of two at once: three fit, whichever cells their tasks fall in.
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => submit(2)));
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(3);
    for (const outcome of outcomes)
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(NoRoomError);
    const usage = await tenantUsage(store, 'acme', room.limits);
    expect(usage.tasks.unfinished).toBe(6);
    // Spread over the cells, and no hold left behind.
    const listed = await Promise.all(store.keys.cells.map((cell) => store.redis.zcard(cell.tenantTasks('acme'))));
    expect(listed.filter((count) => count > 0).length).toBeGreaterThan(1);
    expect(await store.redis.exists(store.keys.tenantRoomHolds('acme'))).toBe(0);
    await expect(submit(1)).rejects.toBeInstanceOf(NoRoomError);
  });

  it('lists a tenant’s tasks of every cell newest first, page by page', async () => {
    const store = storeOf();
    const transitions = new Transitions(store);
    const ids: string[] = [];
    for (let round = 0; round < 4; round++)
      ids.push(
        ...(
          await transitions.submit(
            Array.from({ length: 5 }, (_, index) => ({ prompt: `r${round} ${index}`, agent: 'casual' as const })),
            { tenant: 'acme' },
          )
        ).map((task) => task.id),
      );
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ tenant: 'acme', limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.tasks.map((task) => task.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it('refuses a process whose cell count differs from the install’s', async () => {
    const prefix = freshPrefix('cell-count');
    prefixes.push(prefix);
    const redis = connectRedis({ url: redisUrl() });
    const log = { info: () => undefined, warn: () => undefined };
    try {
      await migrateStorage(redis, createKeys(prefix, 4), log);
      await migrateStorage(redis, createKeys(prefix, 4), log);
      await expect(migrateStorage(redis, createKeys(prefix, 2), log)).rejects.toThrow(CellCountChangedError);
      // An install from before cell counts were kept had one cell.
      const old = freshPrefix('cell-count-old');
      prefixes.push(old);
      await redis.set((createKeys(old) as Keys).storageVersion, '3');
      await expect(migrateStorage(redis, createKeys(old, 3), log)).rejects.toThrow(/in 1 cell, and this process/);
      await migrateStorage(redis, createKeys(old), log);
    } finally {
      redis.disconnect();
    }
  });

  it('starts two processes of a new install at once, whichever reads while the other writes', async () => {
    const prefix = freshPrefix('cell-count-race');
    prefixes.push(prefix);
    const first = connectRedis({ url: redisUrl() });
    const second = connectRedis({ url: redisUrl() });
    const log = { info: () => undefined, warn: () => undefined };
    try {
      // The second process's commands after its first arrive only once the first process started (as
      // on a slow link, or a cluster client refreshing its slots in between).
      let firstStarted!: () => void;
      const started = new Promise<void>((resolve) => (firstStarted = resolve));
      let sent = 0;
      const slow = new Proxy(second, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver) as unknown;
          if (typeof value !== 'function' || !['get', 'mget', 'set'].includes(String(name))) return value;
          return async (...args: unknown[]) => {
            if (sent++ > 0) await started;
            return (value as (...args: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const second$ = migrateStorage(slow, createKeys(prefix, 3), log);
      await migrateStorage(first, createKeys(prefix, 3), log);
      firstStarted();
      await second$;
      expect(await first.get(createKeys(prefix, 3).cellCount)).toBe('3');
    } finally {
      first.disconnect();
      second.disconnect();
    }
  });
});

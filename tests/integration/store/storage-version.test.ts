/** The storage version: migrations run once, in order, the version is kept, and newer data is refused. */
import {
  connectRedis,
  createKeys,
  migrateStorage,
  scheduleBytes,
  ScheduleStore,
  STORAGE_VERSION,
  StorageTooNewError,
  storageVersion,
  TaskStore,
} from '@agentq/store';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';

let redis: Redis;
const prefixes: string[] = [];
const lines: string[] = [];
const logger = {
  info: (_: object, line: string) => lines.push(line),
  warn: (_: object, line: string) => lines.push(line),
};

beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
});
afterAll(async () => {
  redis.disconnect();
  for (const prefix of prefixes) await deletePrefix(prefix);
});

function fresh() {
  const prefix = freshPrefix('storage');
  prefixes.push(prefix);
  return createKeys(prefix);
}

describe('the storage version', () => {
  it('brings data written before versions were kept up to this version, and keeps the number', async () => {
    const keys = fresh();
    // An earlier version's lists: one of every status, scored by order.
    await redis.hset(keys.task('t1'), { id: 't1', status: 'completed', order: '1', tenant: 'acme' });
    await redis.zadd(`${keys.prefix}:tasks`, 1, 't1');
    expect(await storageVersion(redis, keys)).toBe(0);
    await migrateStorage(redis, keys, logger);
    expect(await storageVersion(redis, keys)).toBe(STORAGE_VERSION);
    expect(await redis.exists(`${keys.prefix}:tasks`)).toBe(0);
    // Version 1 moved it into the list of every tenant's tasks; version 3 into its tenant's, whose name
    // is in the set of tenants an admin's list merges.
    expect(await redis.exists(`${keys.prefix}:tasks:index`)).toBe(0);
    expect(await redis.smembers(keys.cells[0]!.tenants)).toEqual(['acme']);
    expect(await redis.zrange(keys.cells[0]!.tenantTasks('acme'), 0, -1)).toEqual(['t1']);
    expect((await new TaskStore(redis, keys).countByStatus()).completed).toBe(1);
    expect(lines.some((line) => line.includes('storage migrated to version 1'))).toBe(true);
  });

  it("merges a task's events an earlier version kept in a stream into its list, in order of seq", async () => {
    const keys = fresh();
    // Storage version 1: the task lists were moved already; this task's first writes are in a stream.
    await redis.set(keys.storageVersion, '1');
    const event = (seq: number) =>
      JSON.stringify({
        id: `t1:${seq}`,
        taskId: 't1',
        rootId: 't1',
        seq,
        ts: '2026-01-01T00:00:00.000Z',
        type: 'reasoning',
        data: { text: `${seq}` },
      });
    await redis.hset(keys.task('t1'), { id: 't1', rootId: 't1', status: 'running', prompt: 'p', seq: '4' });
    const stream = `${keys.task('t1')}:events`;
    await redis.xadd(stream, '2-0', 'events', `${event(1)}\n${event(2)}`);
    // This version's list, and a late write of a process of the earlier version after it.
    await redis.rpush(keys.events('t1'), event(3));
    await redis.xadd(stream, '4-0', 'events', event(4));
    await migrateStorage(redis, keys, logger);
    expect(await storageVersion(redis, keys)).toBe(STORAGE_VERSION);
    expect(await redis.exists(stream)).toBe(0);
    const store = new TaskStore(redis, keys);
    expect((await store.events('t1')).map((stored) => stored.seq)).toEqual([1, 2, 3, 4]);
    expect((await store.events('t1', 2)).map((stored) => stored.seq)).toEqual([3, 4]);
  });

  it("puts the tasks of a list of every tenant's in their tenants' lists, keeping the scores there", async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, '2');
    const everyTenant = `${keys.prefix}:tasks:index`;
    for (const [id, tenant] of [
      ['t1', 'acme'],
      ['t2', 'beta'],
      ['t3', undefined],
    ] as const)
      await redis.hset(keys.task(id), { id, status: 'completed', ...(tenant ? { tenant } : {}) });
    await redis.zadd(everyTenant, 10, 't1', 20, 't2', 30, 't3');
    // t1 is in its tenant's list already, with a newer score than the list of every tenant's has.
    await redis.zadd(keys.cells[0]!.tenantTasks('acme'), 11, 't1');
    await migrateStorage(redis, keys, logger);
    expect(await redis.exists(everyTenant)).toBe(0);
    expect((await redis.smembers(keys.cells[0]!.tenants)).sort()).toEqual(['acme', 'beta', 'default']);
    expect(await redis.zrange(keys.cells[0]!.tenantTasks('acme'), 0, -1, 'WITHSCORES')).toEqual(['t1', '11']);
    expect(await redis.zrange(keys.cells[0]!.tenantTasks('beta'), 0, -1, 'WITHSCORES')).toEqual(['t2', '20']);
    expect(await redis.zrange(keys.cells[0]!.tenantTasks('default'), 0, -1, 'WITHSCORES')).toEqual(['t3', '30']);
    expect(lines.some((line) => line.includes('storage migrated to version 3'))).toBe(true);
  });

  it.each([1, 4])(
    "counts an earlier version's schedules toward their tenant's bytes, their files apart, in %i cells",
    async (cells) => {
      const prefix = freshPrefix('storage');
      prefixes.push(prefix);
      const keys = createKeys(prefix, cells);
      await redis.mset(keys.storageVersion, '4', keys.cellCount, String(cells));
      // Version 4: a schedule's task held its files in base64; its tenant's list was scored by creation.
      const content = Buffer.from('a file the task is given');
      const old = (id: string, createdAt: number, files: boolean) => ({
        id,
        tenant: 'acme',
        every: '60000',
        overlap: 'skip',
        paused: 'true',
        createdAt: new Date(createdAt).toISOString(),
        lastTaskId: 'the-last-task',
        task: JSON.stringify({
          prompt: `p ${id}`,
          agent: 'casual',
          ...(files ? { files: [{ path: 'in.txt', content: content.toString('base64') }] } : {}),
        }),
      });
      const ids = ['sch_00000000-0000-4000-8000-000000000001', 'sch_00000000-0000-4000-8000-000000000002'];
      await redis.hset(`${prefix}:schedule:${ids[0]}`, old(ids[0]!, 1_000, true));
      await redis.hset(`${prefix}:schedule:${ids[1]}`, old(ids[1]!, 2_000, false));
      await redis.rpush(
        `${prefix}:schedule:${ids[0]}:runs`,
        JSON.stringify({ at: 'then', taskId: 't', skipped: null }),
      );
      await redis.zadd(`${prefix}:tenant:acme:schedules`, 1_000, ids[0]!, 2_000, ids[1]!);

      await migrateStorage(redis, keys, logger);
      const store = new ScheduleStore(redis, keys);
      const page = await store.page({ tenant: 'acme', limit: 10 });
      expect(page.schedules.map((schedule) => schedule.id)).toEqual([ids[1], ids[0]]);
      expect((await store.page({ limit: 10 })).schedules.map((schedule) => schedule.id)).toEqual([ids[1], ids[0]]);
      const [second, first] = page.schedules;
      expect(JSON.parse(first!.task)).toEqual({
        prompt: `p ${ids[0]}`,
        agent: 'casual',
        files: [{ path: 'in.txt', size: content.length }],
      });
      expect(first).toMatchObject({ paused: true, every: 60_000, lastTaskId: 'the-last-task' });
      expect(await store.files(ids[0]!)).toEqual([{ path: 'in.txt', content }]);
      expect(await store.runs(ids[0]!)).toEqual([{ at: 'then', taskId: 't', skipped: null }]);
      expect(first!.bytes).toBe(scheduleBytes(first!.task, content.length));
      const counted = Number(await redis.get(keys.cells[0]!.tenantBytes('acme')));
      expect(counted).toBe(first!.bytes + second!.bytes);
      expect(await redis.exists(`${prefix}:schedule:${ids[0]}:runs`)).toBe(cells === 1 ? 1 : 0);
      if (cells > 1)
        expect(await redis.exists(`${prefix}:schedule:${ids[0]}`, `${prefix}:tenant:acme:schedules`)).toBe(0);

      // Run again (a process of the earlier version wrote since): nothing is counted twice.
      await redis.set(keys.storageVersion, '4');
      await migrateStorage(redis, keys, logger);
      expect(Number(await redis.get(keys.cells[0]!.tenantBytes('acme')))).toBe(counted);
      // Deleting them gives every byte back.
      for (const id of ids) expect(await store.remove({ id, tenant: 'acme' })).toBe(true);
      expect(await redis.exists(keys.cells[0]!.tenantBytes('acme'))).toBe(0);
      expect(lines.some((line) => line.includes('storage migrated to version 5'))).toBe(true);
    },
  );

  it("puts each due webhook delivery in its task's tenant's due set, keeping its score", async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, '5');
    const cell = keys.cells[0]!;
    const everyTenant = `${keys.prefix}:webhooks:due`;
    await redis.hset(keys.task('t1'), { id: 't1', status: 'completed', tenant: 'acme' });
    await redis.hset(keys.task('t2'), { id: 't2', status: 'failed' });
    // msg_t3_2's task is gone: its delivery goes to the default tenant's set, where a sender drops it.
    await redis.zadd(everyTenant, 10, 'msg_t1_5', 20, 'msg_t2_3', 30, 'msg_t3_2');
    await migrateStorage(redis, keys, logger);
    expect(await redis.exists(everyTenant)).toBe(0);
    expect((await redis.smembers(cell.webhookTenants)).sort()).toEqual(['acme', 'default']);
    expect(await redis.zrange(cell.tenantWebhooksDue('acme'), 0, -1, 'WITHSCORES')).toEqual(['msg_t1_5', '10']);
    expect(await redis.zrange(cell.tenantWebhooksDue('default'), 0, -1, 'WITHSCORES')).toEqual([
      'msg_t2_3',
      '20',
      'msg_t3_2',
      '30',
    ]);
    expect(lines.some((line) => line.includes('storage migrated to version 6'))).toBe(true);
  });

  it('runs nothing for data at this version', async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, String(STORAGE_VERSION));
    // Left by a process of an earlier version after the migration ran: not looked for again.
    await redis.zadd(`${keys.prefix}:tasks`, 1, 't1');
    await migrateStorage(redis, keys, logger);
    expect(await redis.exists(`${keys.prefix}:tasks`)).toBe(1);
  });

  it('refuses data a newer agentq wrote, saying what to do', async () => {
    const keys = fresh();
    await redis.set(keys.storageVersion, String(STORAGE_VERSION + 1));
    const start = migrateStorage(redis, keys, logger);
    await expect(start).rejects.toBeInstanceOf(StorageTooNewError);
    await expect(start).rejects.toThrow(new RegExp(`storage version ${STORAGE_VERSION + 1}.*AGENTQ_REDIS_PREFIX`));
    expect(await storageVersion(redis, keys)).toBe(STORAGE_VERSION + 1);
  });
});

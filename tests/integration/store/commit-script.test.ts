import { randomUUID } from 'node:crypto';
/** The commit script's contract, against a real Redis: named outcomes, the envelope, `seq` without gaps. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';
import { createKeys, countByStatus, indexScore, connectRedis, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';

const prefix = freshPrefix('commit');
let store: TaskStore;
let other: TaskStore;
let transitions: Transitions;

beforeAll(() => {
  const keys = createKeys(prefix);
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  other = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  transitions = new Transitions(store);
});
afterAll(async () => {
  store.redis.disconnect();
  other.redis.disconnect();
  await deletePrefix(prefix);
});

async function newTask() {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual' }], { tenant: 'acme' });
  return (await store.getRecord(created!.id))!;
}

describe('the commit script', () => {
  it('refuses a stale run token, a wrong status and a missing task, by name, writing nothing', async () => {
    const task = await newTask();
    expect(await transitions.claim(task, { runToken: 'first' })).toMatchObject({
      outcome: 'applied',
      status: 'running',
    });
    // Another run took the task over: the first one's writes are refused.
    await transitions.claim(task, { runToken: 'second' });
    const stale: string[] = [];
    store.onStaleWrite((taskId) => stale.push(taskId));
    expect(
      await store.commit({
        taskId: task.id,
        tenant: 'acme',
        runToken: 'first',
        messages: [{ role: 'user', content: 'late' }],
      }),
    ).toMatchObject({ outcome: 'stale_token', applied: false });
    // The process is told (its log line and agentq_stale_writes_total).
    expect(stale).toEqual([task.id]);
    expect(await transitions.release(task)).toMatchObject({
      outcome: 'wrong_status',
      applied: false,
      status: 'running',
    });
    expect(await store.commit({ taskId: randomUUID(), tenant: 'acme', fields: { x: '1' } })).toMatchObject({
      outcome: 'missing',
      applied: false,
      status: undefined,
    });
    expect(await store.messages(task.id)).toEqual([]);
    // The run that holds it writes.
    expect(await transitions.complete(task, { runToken: 'second', result: 'done' })).toMatchObject({
      outcome: 'applied',
      status: 'completed',
    });
  });

  it('numbers every event itself (id, seq, rootId), with the rest kept as the writer sent it', async () => {
    const task = await newTask();
    const at = '2026-01-02T03:04:05.678Z';
    await store.commit({
      taskId: task.id,
      tenant: 'acme',
      events: [
        {
          type: 'tool.result',
          step: 2,
          agent: 'coder',
          worker: 'w:1',
          data: { id: 'c1', name: 'bash', ok: true, output: 'a/b "quoted" \ud83d', durationMs: 3 },
        },
        // A subtask's event in its root's stream keeps the subtask's id; one held back keeps its time.
        { type: 'reasoning', taskId: `${task.id}.v1.s1`, at, data: { text: 'mirrored' } },
        { type: 'reasoning', taskId: '', at: '', data: { text: "no taskId, no time: the owner and the commit's" } },
      ],
    });
    const events = await store.events(task.id);
    expect(events).toEqual([
      {
        id: `${task.id}:1`,
        taskId: task.id,
        rootId: task.id,
        seq: 1,
        ts: expect.any(String),
        type: 'task.queued',
        agent: 'casual',
        data: { priority: 5 },
      },
      {
        id: `${task.id}:2`,
        taskId: task.id,
        rootId: task.id,
        seq: 2,
        ts: expect.any(String),
        type: 'tool.result',
        step: 2,
        agent: 'coder',
        worker: 'w:1',
        data: { id: 'c1', name: 'bash', ok: true, output: 'a/b "quoted" \ud83d', durationMs: 3 },
      },
      {
        id: `${task.id}:3`,
        taskId: `${task.id}.v1.s1`,
        rootId: task.id,
        seq: 3,
        ts: at,
        type: 'reasoning',
        data: { text: 'mirrored' },
      },
      {
        id: `${task.id}:4`,
        taskId: task.id,
        rootId: task.id,
        seq: 4,
        ts: events[1]!.ts,
        type: 'reasoning',
        data: { text: "no taskId, no time: the owner and the commit's" },
      },
    ]);
  });

  it('stores a prompt and a result with an unpaired surrogate (half an emoji) as U+FFFD, and the rest as written', async () => {
    const [created] = await transitions.submit([{ prompt: 'cut \ud83d "here" \\ there', agent: 'casual' }], {
      tenant: 'acme',
    });
    const task = (await store.getRecord(created!.id))!;
    expect(task.prompt).toBe('cut \ufffd "here" \\ there');
    await transitions.claim(task, { runToken: 'run' });
    await transitions.complete(task, { runToken: 'run', result: 'done \udc00 "x"' });
    expect((await store.getRecord(task.id))!.result).toBe('done \ufffd "x"');
  });

  it("reads a claimed task's record whole, short or long, whatever text its fields hold", async () => {
    // A short record comes back as one string joined by byte 255, a long one a string a field (commit.lua):
    // text next to that byte in Unicode (U+00FF, U+FFFD, NUL, an emoji) is read back as written.
    const odd = 'ÿ \ufffd \u0000 🦊 "q" \\ ';
    for (const prompt of [odd, `${odd}${'long '.repeat(400)}`]) {
      const [created] = await transitions.submit([{ prompt, agent: 'casual', metadata: { note: odd } }], {
        tenant: 'acme',
      });
      const claim = await transitions.claim({ id: created!.id, tenant: 'acme' }, { runToken: 'run', worker: odd });
      expect(claim.applied).toBe(true);
      expect(claim.record).toMatchObject({ id: created!.id, prompt, metadata: { note: odd }, status: 'queued' });
      // Read again by a claim that is refused: the record as it is now, its worker the odd text.
      await transitions.complete(claim.record!, { runToken: 'run', result: 'done' });
      const refused = await transitions.claim({ id: created!.id, tenant: 'acme' }, { runToken: 'late' });
      expect(refused).toMatchObject({ applied: false, status: 'completed' });
      expect(refused.record).toMatchObject({ prompt, worker: odd, result: 'done' });
    }
  });

  it("stores a batch's tasks each as its own where they differ from the first", async () => {
    const tasks = await transitions.submit(
      [
        { prompt: 'plain', agent: 'casual' },
        { prompt: 'keyed', agent: 'casual', concurrencyKey: 'k' },
        { prompt: 'urgent', agent: 'coder', priority: 9 },
      ],
      { tenant: 'acme' },
    );
    const [plain, keyed, urgent] = await Promise.all(tasks.map((task) => store.getRecord(task.id)));
    expect(plain).toMatchObject({ agent: 'casual', priority: 5 });
    expect(keyed).toMatchObject({ agent: 'casual', priority: 5, concurrencyKey: 'k' });
    expect(urgent).toMatchObject({ agent: 'coder', priority: 9 });
    const cell = store.keys.cellOf(plain!.id);
    const casual = await store.redis.zrange(cell.fairList('casual', 'acme'), 0, -1);
    expect(casual).toContain(plain!.id);
    // A task with a concurrency key waits in its key's queue, not in its pool's list.
    expect(casual).not.toContain(keyed!.id);
    expect(await store.redis.zrange(cell.fairList('coder', 'acme'), 0, -1)).toEqual([urgent!.id]);
    for (const task of [plain, keyed, urgent]) {
      expect(await store.redis.zscore(cell.tenantTasks('acme'), task!.id)).not.toBeNull();
      expect((await store.events(task!.id)).map((event) => event.type)).toEqual(['task.queued']);
    }
  });

  it('numbers events with no gap and no repeat under concurrent commits from two connections', async () => {
    const task = await newTask();
    const commit = (through: TaskStore, index: number) =>
      through.commit({
        taskId: task.id,
        tenant: 'acme',
        events: [0, 1].map((part) => ({ type: 'reasoning' as const, data: { text: `${index}.${part}` } })),
      });
    await Promise.all(Array.from({ length: 100 }, (_, index) => commit(index % 2 ? store : other, index)));
    const events = await store.events(task.id);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 201 }, (_, index) => index + 1));
    expect(new Set(events.map((event) => event.id)).size).toBe(201);
    // Each commit's events are together: its two parts are next to each other.
    for (let index = 1; index < 201; index += 2) {
      const [first, second] = [events[index]!, events[index + 1]!];
      expect(
        first.type === 'reasoning' &&
          second.type === 'reasoning' &&
          first.data.text.split('.')[0] === second.data.text.split('.')[0],
      ).toBe(true);
    }
  });

  it("moves a submitted task to its new status in its tenant's list", async () => {
    const task = await newTask();
    const keys = store.keys;
    const order = Number(await store.redis.hget(keys.task(task.id), 'order'));
    expect(order).toBeGreaterThan(0);
    const score = async () => Number(await store.redis.zscore(keys.cells[0]!.tenantTasks('acme'), task.id));
    const before = await countByStatus(store.redis, keys.cells[0]!.tenantTasks('acme'));
    expect(await score()).toBe(indexScore('queued', order));
    await transitions.claim(task, { runToken: 'r' });
    expect(await score()).toBe(indexScore('running', order));
    expect(await countByStatus(store.redis, keys.cells[0]!.tenantTasks('acme'))).toMatchObject({
      queued: before.queued - 1,
      running: before.running + 1,
    });
    // Declared for another tenant than the task's, a commit is refused rather than touching that tenant's keys.
    await expect(store.commit({ taskId: task.id, tenant: 'other', status: 'failed' })).rejects.toThrow(
      /declared tenant other, but it is acme's/,
    );
  });

  it("sends a step's commit only the keys a step touches, and a claim and an end all of them", async () => {
    const task = await newTask();
    const monitor = await connectRedis({ url: redisUrl() }).monitor();
    const sent: number[] = [];
    const watched = new Promise<void>((resolve) =>
      monitor.on('monitor', (_time: string, args: string[]) => {
        // EVALSHA <sha> <how many keys> <the record's key first> ...
        if (args[0]?.toLowerCase() === 'evalsha' && args[3] === store.keys.task(task.id)) sent.push(Number(args[2]));
        if (sent.length === 3) resolve();
      }),
    );
    try {
      await transitions.claim(task, { runToken: 'r' });
      const step = await store.commit({
        taskId: task.id,
        tenant: 'acme',
        runToken: 'r',
        expect: ['running'],
        messages: [{ role: 'assistant', content: 'thinking' }],
        events: [{ type: 'step.completed', step: 1, data: { step: 1 } }],
        steps: 1,
      });
      expect(step).toMatchObject({ outcome: 'applied', applied: true });
      await store.commit({ taskId: task.id, tenant: 'acme', runToken: 'r', status: 'completed' });
      await watched;
      expect(sent).toEqual([14, 6, 14]);
      expect(await store.getRecord(task.id)).toMatchObject({ status: 'completed', steps: 1 });
      expect((await store.messages(task.id)).at(-1)).toMatchObject({ role: 'assistant', content: 'thinking' });
    } finally {
      monitor.disconnect();
    }
  });

  it('with commits that wait for a replica, throws when none confirms one in time (this Redis has none)', async () => {
    const task = await newTask();
    const durable = new TaskStore(store.redis, store.keys, { durability: { replicas: 1, timeoutMs: 50 } });
    await expect(durable.commit({ taskId: task.id, tenant: 'acme', fields: { x: '1' } })).rejects.toThrow(
      /not confirmed by 1 Redis replica within 50 ms \(AGENTQ_COMMIT_REPLICAS\)/,
    );
    // A claim too, whose answer comes as bytes (its record one string).
    await expect(new Transitions(durable).claim({ id: task.id, tenant: 'acme' }, { runToken: 'run' })).rejects.toThrow(
      /not confirmed by 1 Redis replica/,
    );
    // A commit refused anyway is answered as it is: nothing was written for a replica to hold.
    expect(
      await durable.commit({ taskId: task.id, tenant: 'acme', runToken: 'nobody', fields: { y: '1' } }),
    ).toMatchObject({
      outcome: 'stale_token',
    });
  });
});

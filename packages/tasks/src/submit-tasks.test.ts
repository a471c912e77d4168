/**
 * A submission's records and jobs, chunked and overlapped, its tenant's room taken in the calls that
 * store it (tenant-room.ts, with calls that race), and its tenant's bytes counted by the scripts that
 * write and taken off by the one that removes (tenant-bytes.ts), against a real Redis and real BullMQ queues.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues, type FairAdmission } from '@agentq/scheduling';
import {
  createKeys,
  countByStatus,
  connectRedis,
  removeTaskTrees,
  TaskStore,
  createdBytes,
  IdempotencyMismatchError,
  NoRoomError,
  type RoomLimits,
} from '@agentq/store';
import { taskDigest } from './request-digest.js';
import { EnqueueError, submitTasks } from './submit-tasks.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('submit');
const keys = createKeys(prefix);
let store: TaskStore;
let transitions: Transitions;
let queues: AgentQueues;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  transitions = new Transitions(store);
  queues = createAgentQueues({ pools: ['planner', 'coder', 'file', 'casual', 'web'], connection: store.redis, keys });
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

describe('submitting tasks', () => {
  it('stores every task and gives it to its tenant’s turn (a backlog of jobs, the rest waiting), over several chunks, in the order given', async () => {
    const inputs = Array.from({ length: 1_234 }, (_, index) => ({
      prompt: `task ${index}`,
      agent: index % 2 ? ('casual' as const) : ('coder' as const),
    }));
    const tasks = await submitTasks({ transitions, queues, inputs, tenant: 'acme' });
    expect(tasks).toHaveLength(inputs.length);
    const records = await Promise.all(tasks.map((task) => store.getRecord(task.id)));
    expect(records.map((record) => record?.prompt)).toEqual(inputs.map((input) => input.prompt));
    // Each task has its job, or waits in its tenant's list for the pool; the queues hold the backlog only.
    const jobs = await Promise.all(tasks.map((task) => queues.cells[0]!.queue(task.agent).getJob(task.id)));
    const waiting = await Promise.all(
      tasks.map((task) => store.redis.zscore(keys.cells[0]!.fairList(task.agent, 'acme'), task.id)),
    );
    expect(tasks.every((task, index) => (jobs[index]?.data.taskId === task.id) !== (waiting[index] !== null))).toBe(
      true,
    );
    expect(jobs.filter((job) => job?.queueName === 'casual')).toHaveLength(100);
    expect(jobs.filter((job) => job?.queueName === 'coder')).toHaveLength(100);
    // The first of each pool's tasks were admitted first.
    expect(jobs.findIndex((job) => !job)).toBeGreaterThanOrEqual(200);
    // Listed in submission order, across chunks.
    const listed = await store.list({ tenant: 'acme', limit: 500 });
    expect(listed.tasks.slice(0, 3).map((task) => task.prompt)).toEqual(['task 1233', 'task 1232', 'task 1231']);
  });

  it('sends each pool’s turn right behind the CREATE that lists its tasks, without waiting for its answer', async () => {
    const sent = vi.spyOn(store.redis, 'sendCommand');
    // Pools whose queues earlier tests left empty: the planner's (no agent named) and the web's.
    const inputs = [{ prompt: 'behind its create' }, { prompt: 'and another pool', agent: 'web' as const }];
    const submitting = submitTasks({ transitions, queues, inputs, tenant: 'delta' });
    // Nothing answered yet: the CREATE, then the turn of each pool, are on their way (in that order).
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(['evalsha', 'evalsha', 'evalsha']);
    sent.mockRestore();
    const tasks = await submitting;
    const jobs = await Promise.all(tasks.map((task) => queues.cells[0]!.queue(task.agent).getJob(task.id)));
    expect(jobs.map((job) => job?.data.taskId)).toEqual(tasks.map((task) => task.id));
  });

  it('takes a turn for each chunk’s pools: a pool a later chunk fills is admitted up to its backlog', async () => {
    // Queues of their own: how many jobs the pool holds is this test's alone.
    const ownPrefix = freshPrefix('submit-mixed');
    const ownKeys = createKeys(ownPrefix);
    const ownStore = new TaskStore(connectRedis({ url: redisUrl() }), ownKeys);
    const ownQueues = createAgentQueues({
      pools: ['planner', 'coder', 'file', 'casual', 'web'],
      connection: ownStore.redis,
      keys: ownKeys,
    });
    try {
      // The first chunk has one web task among 199 others; the second has 150 more.
      const inputs = [
        ...Array.from({ length: 199 }, (_, index) => ({ prompt: `casual ${index}`, agent: 'casual' as const })),
        ...Array.from({ length: 151 }, (_, index) => ({ prompt: `web ${index}`, agent: 'web' as const })),
      ];
      await submitTasks({ transitions: new Transitions(ownStore), queues: ownQueues, inputs, tenant: 'epsilon' });
      expect(await ownQueues.cells[0]!.queue('web').getJobCountByTypes('wait', 'prioritized')).toBe(100);
      expect(await ownQueues.cells[0]!.queue('casual').getJobCountByTypes('wait', 'prioritized')).toBe(100);
    } finally {
      await closeQueues(ownQueues);
      ownStore.redis.disconnect();
      await deletePrefix(ownPrefix);
    }
  });

  it('lists every stored task in its tenant’s turn in the same call: a failed turn right after loses none', async () => {
    const failingTurn = Object.assign(Object.create(queues.cells[0]!.admission) as object, {
      admit: () => Promise.reject(new Error('the queue is gone')),
    });
    const broken = {
      ...queues,
      admitListed: (listed: ReadonlyArray<{ pool: string }>) =>
        (failingTurn as unknown as FairAdmission).admitListed(listed.map((task) => task.pool)),
    } as unknown as AgentQueues;
    const inputs = Array.from({ length: 250 }, (_, index) => ({ prompt: `listed ${index}`, agent: 'file' as const }));
    const tasks = await submitTasks({ transitions, queues: broken, inputs, tenant: 'gamma' });
    expect(tasks).toHaveLength(250);
    // Stored, queued, in their tenant's list, and no job yet.
    expect((await countByStatus(store.redis, keys.cells[0]!.tenantTasks('gamma'))).queued).toBe(250);
    expect(await store.redis.zcard(keys.cells[0]!.fairList('file', 'gamma'))).toBe(250);
    expect(await queues.cells[0]!.queue('file').getJob(tasks[0]!.id)).toBeUndefined();
    // The next turn (every worker takes one each second) gives the first of them their jobs, the backlog's worth.
    expect(await queues.cells[0]!.admission.admit('file')).toBe(100);
    expect((await queues.cells[0]!.queue('file').getJob(tasks[0]!.id))?.data.taskId).toBe(tasks[0]!.id);
    expect(await store.redis.zcard(keys.cells[0]!.fairList('file', 'gamma'))).toBe(150);
  });

  it('fails the tasks of the other chunks when a chunk could not be stored, and keeps those with an idempotency key queued for the retry', async () => {
    let calls = 0;
    const flaky = Object.assign(Object.create(transitions) as object, {
      submit: (...args: Parameters<Transitions['submit']>) =>
        ++calls === 2 ? Promise.reject(new Error('Redis said no')) : transitions.submit(...args),
    }) as Transitions;
    const inputs = [
      ...Array.from({ length: 449 }, (_, index) => ({ prompt: `casual ${index}`, agent: 'casual' as const })),
      { prompt: 'coder with key', agent: 'coder' as const, idempotencyKey: 'retry-me' },
    ];
    const failure = await submitTasks({ transitions: flaky, queues, inputs, tenant: 'beta' }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(EnqueueError);
    expect((failure as Error).message).toContain('Redis said no');
    const statuses = async (status: 'failed' | 'queued') =>
      (await store.list({ tenant: 'beta', status, limit: 500 })).tasks;
    // The first chunk (200) and the last but one (49 of the last 50) are failed: nothing of them runs.
    expect((await countByStatus(store.redis, keys.cells[0]!.tenantTasks('beta'))).failed).toBe(249);
    expect((await statuses('failed')).every((task) => task.error?.code === 'enqueue_failed')).toBe(true);
    expect((await statuses('queued')).map((task) => task.prompt)).toEqual(['coder with key']);
    // What had not had its turn yet left its tenant's list.
    expect(await store.redis.zcard(keys.cells[0]!.fairList('casual', 'beta'))).toBe(0);
  });

  it('refuses a key that another request stored with another body between the check and its call, failing what the other calls stored', async () => {
    const keyed = { prompt: 'the last', agent: 'casual' as const, idempotencyKey: 'raced' };
    const inputs = [
      ...Array.from({ length: 449 }, (_, index) => ({ prompt: `raced ${index}`, agent: 'casual' as const })),
      keyed,
    ];
    let other: string | undefined;
    // The third chunk's call (the keyed task's) comes after another request stored its key, with another body.
    let calls = 0;
    const racing = Object.assign(Object.create(transitions) as object, {
      submit: async (...args: Parameters<Transitions['submit']>) => {
        if (++calls === 3) {
          const [made] = await transitions.submit([{ ...keyed, prompt: 'another body' }], {
            tenant: 'gamma-race',
            digests: [taskDigest({ ...keyed, prompt: 'another body' }, undefined)],
          });
          other = made!.id;
        }
        return transitions.submit(...args);
      },
    }) as Transitions;
    const failure = await submitTasks({
      transitions: racing,
      queues,
      inputs,
      tenant: 'gamma-race',
      digests: inputs.map((input) => (input === keyed ? taskDigest(input, undefined) : undefined)),
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(IdempotencyMismatchError);
    const refused = failure as IdempotencyMismatchError;
    expect(refused.mismatches).toEqual([{ index: 449, idempotencyKey: 'raced', taskId: other }]);
    // The two chunks stored before are failed, saying why: nothing of the request runs.
    expect(refused.created).toHaveLength(400);
    const counts = await countByStatus(store.redis, keys.cells[0]!.tenantTasks('gamma-race'));
    expect(counts).toMatchObject({ failed: 400, queued: 1 });
    const failed = (await store.list({ tenant: 'gamma-race', status: 'failed', limit: 1 })).tasks[0]!;
    expect(failed.error).toMatchObject({ code: 'enqueue_failed', message: expect.stringContaining('idempotencyKey') });
    expect(
      (await store.list({ tenant: 'gamma-race', status: 'queued', limit: 5 })).tasks.map((task) => task.id),
    ).toEqual([other]);
  });
});

const roomInputs = (count: number, name: string) =>
  Array.from({ length: count }, (_, index) => ({ prompt: `${name} ${index}`, agent: 'casual' as const }));
const stored = (tenant: string) => store.redis.zcard(keys.cells[0]!.tenantTasks(tenant));
const holds = (tenant: string) =>
  store.redis.exists(keys.cells[0]!.tenantRoomHeld(tenant), keys.cells[0]!.tenantRoomUntil(tenant));

describe("a tenant's room", () => {
  it('lets through exactly what fits when submits of one tenant come at once, each on a connection of its own', async () => {
    const limits: RoomLimits = { unfinished: 7, stored: 100 };
    const connections = Array.from(
      { length: 12 },
      () => new Transitions(new TaskStore(connectRedis({ url: redisUrl() }), keys)),
    );
    try {
      const outcomes = await Promise.allSettled(
        connections.map((own, index) =>
          own.submit(roomInputs(2, `at once ${index}`), { tenant: 'race', room: { limits } }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(3);
      const refusals = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason as unknown] : [],
      );
      expect(refusals).toHaveLength(9);
      expect(
        refusals.every(
          (reason) => reason instanceof NoRoomError && reason.limit === 'unfinished' && reason.unfinished === 6,
        ),
      ).toBe(true);
      expect(await stored('race')).toBe(6);
    } finally {
      for (const own of connections) own.store.redis.disconnect();
    }
  });

  it('checks a submit of several calls whole in its first: all of it is stored, or none', async () => {
    // 450 tasks: three CREATE calls.
    await expect(
      submitTasks({
        transitions,
        queues,
        inputs: roomInputs(450, 'too many'),
        tenant: 'big',
        room: { unfinished: 449, stored: 1_000 },
      }),
    ).rejects.toThrow(NoRoomError);
    expect(await stored('big')).toBe(0);
    expect(await holds('big')).toBe(0);
    expect(
      await submitTasks({
        transitions,
        queues,
        inputs: roomInputs(450, 'just fits'),
        tenant: 'big',
        room: { unfinished: 450, stored: 1_000 },
      }),
    ).toHaveLength(450);
    expect(await stored('big')).toBe(450);
    // What the first call held for the others is all taken: nothing is left held.
    expect(await holds('big')).toBe(0);
  });

  it("counts what a submit's first call holds for its later calls as taken, until they take it or it expires", async () => {
    const limits: RoomLimits = { unfinished: 300, stored: 1_000 };
    const claim = { id: 'submit-1', tasks: 300, bytes: 0 };
    await transitions.submit(roomInputs(100, 'first part'), {
      tenant: 'held',
      room: { limits, claim: { ...claim, first: true } },
    });
    // 100 stored and 200 held: no room for one more.
    await expect(
      transitions.submit(roomInputs(1, 'between'), { tenant: 'held', room: { limits } }),
    ).rejects.toMatchObject({ unfinished: 300, stored: 300 });
    await transitions.submit(roomInputs(150, 'second part'), {
      tenant: 'held',
      room: { limits, claim: { ...claim, first: false } },
    });
    expect(await store.redis.zscore(keys.cells[0]!.tenantRoomHeld('held'), 'submit-1')).toBe('50');
    // The last part never comes (its process died): once its hold expires, its room is free again.
    await store.redis.zadd(keys.cells[0]!.tenantRoomUntil('held'), 1, 'submit-1');
    expect(
      await transitions.submit(roomInputs(50, 'after the expiry'), { tenant: 'held', room: { limits } }),
    ).toHaveLength(50);
    expect(await holds('held')).toBe(0);
    // The late part finds no hold, and stores nothing.
    await expect(
      transitions.submit(roomInputs(50, 'too late'), {
        tenant: 'held',
        room: { limits, claim: { ...claim, first: false } },
      }),
    ).rejects.toThrow(/held no room for these tasks/);
    expect(await stored('held')).toBe(300);
  });

  it('counts ended tasks against the stored limit, and leaves other tenants their own room', async () => {
    const limits: RoomLimits = { unfinished: 10, stored: 3 };
    const tasks = await transitions.submit(roomInputs(3, 'kept'), { tenant: 'full', room: { limits } });
    for (const task of tasks)
      await transitions.cancel(
        { id: task.id, tenant: 'full', listed: true },
        { from: ['queued'], reason: 'to end it' },
      );
    const refused = await transitions
      .submit(roomInputs(1, 'one more'), { tenant: 'full', room: { limits } })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoRoomError);
    expect(refused).toMatchObject({ limit: 'stored', unfinished: 0, stored: 3, requested: 1 });
    expect(
      await transitions.submit(roomInputs(3, 'another tenant'), { tenant: 'other', room: { limits } }),
    ).toHaveLength(3);
  });
});

const written = async (tenant: string) => Number((await store.redis.get(keys.cells[0]!.tenantBytes(tenant))) ?? 0);
const bytesInputs = (count: number, prompt: string) =>
  Array.from({ length: count }, (_, index) => ({ prompt: `${prompt} ${index}`, agent: 'casual' as const }));
const bytesOf = (list: Array<{ prompt: string }>) => list.reduce((total, input) => total + createdBytes(input), 0);

describe("a tenant's bytes", () => {
  it('counts new tasks at once, and each step of a run as it is written, and takes them off when the tasks are removed (once, whoever removes them)', async () => {
    const submitted = bytesInputs(2, 'é'.repeat(1_000));
    const [first, second] = await transitions.submit(submitted, { tenant: 'counted' });
    expect(await written('counted')).toBe(bytesOf(submitted));
    expect(bytesOf(submitted)).toBeGreaterThan(4_000);

    // The claim's few fields are not counted; a step (its message, its event) is, on the task and its tenant.
    const ref = { id: first!.id, tenant: 'counted', listed: true };
    const by = { runToken: 'run-1', agent: 'casual', worker: 'w1' };
    expect((await transitions.claim(ref, by)).applied).toBe(true);
    expect(await written('counted')).toBe(bytesOf(submitted));
    const message = { role: 'assistant' as const, content: 'x'.repeat(10_000) };
    expect(
      (
        await store.commit({
          taskId: ref.id,
          tenant: 'counted',
          runToken: by.runToken,
          messages: [message],
          events: [{ type: 'reasoning', data: { text: 'thinking' } }],
        })
      ).applied,
    ).toBe(true);
    const stepped = Number(await store.redis.hget(keys.task(ref.id), 'bytes'));
    expect(stepped).toBeGreaterThan(createdBytes(submitted[0]!) + 10_000);
    expect(await written('counted')).toBe(stepped + createdBytes(submitted[1]!));
    expect((await transitions.complete(ref, { ...by, result: 'y'.repeat(5_000) })).applied).toBe(true);
    const ended = Number(await store.redis.hget(keys.task(ref.id), 'bytes'));
    expect(ended).toBeGreaterThan(stepped + 5_000);
    expect(await written('counted')).toBe(ended + createdBytes(submitted[1]!));

    await transitions.cancel(
      { id: second!.id, tenant: 'counted', listed: true },
      { from: ['queued'], reason: 'to end it' },
    );
    const both = await written('counted');
    // Two removals at once (an expiry and a delete): taken off once.
    await Promise.all([
      removeTaskTrees(store, [first!.id, second!.id]),
      removeTaskTrees(store, [second!.id, first!.id]),
    ]);
    expect(both).toBeGreaterThan(ended + createdBytes(submitted[1]!));
    expect(await written('counted')).toBe(0);
    expect(await store.redis.exists(keys.cells[0]!.tenantBytes('counted'))).toBe(0);
  });

  it("tells a run to stop once its tenant's tasks wrote past the byte limit", async () => {
    const limited = new TaskStore(store.redis, keys, { tenantMaxBytes: { '*': 20_000 } });
    const [task] = await new Transitions(limited).submit(bytesInputs(1, 'stop'), { tenant: 'stopped' });
    const by = { runToken: 'run-1', agent: 'casual', worker: 'w1' };
    expect((await new Transitions(limited).claim({ id: task!.id, tenant: 'stopped' }, by)).stop).toBeUndefined();
    const step = (size: number) =>
      limited.commit({
        taskId: task!.id,
        tenant: 'stopped',
        runToken: by.runToken,
        messages: [{ role: 'assistant', content: 'x'.repeat(size) }],
      });
    expect((await step(10_000)).stop).toBeUndefined();
    expect(await step(10_000)).toMatchObject({ applied: true, stop: 'tenant_bytes' });
    // A queued task of the tenant is told at its claim, before its first model call.
    const [queued] = await new Transitions(limited).submit(bytesInputs(1, 'queued'), { tenant: 'stopped' });
    expect(
      (await new Transitions(limited).claim({ id: queued!.id, tenant: 'stopped' }, { ...by, runToken: 'run-2' })).stop,
    ).toBe('tenant_bytes');
  });

  it('counts a plan a task gives with it, in the room check and in what is written', async () => {
    const plan = [
      { id: 'one', agent: 'coder' as const, task: 'x'.repeat(2_000) },
      { id: 'two', agent: 'file' as const, task: 'y'.repeat(1_000), need: ['one'] },
    ];
    const input = { prompt: 'planned', plan };
    const size =
      createdBytes({ prompt: 'planned' }) +
      Buffer.byteLength(JSON.stringify(plan.map((subtask) => ({ need: [], ...subtask }))));
    expect(size).toBeGreaterThan(3_000);
    const limits = (bytes: number): RoomLimits => ({ unfinished: 10, stored: 10, bytes });
    await expect(
      submitTasks({ transitions, queues, inputs: [input], tenant: 'planner', room: limits(size - 1) }),
    ).rejects.toBeInstanceOf(NoRoomError);
    expect(
      await submitTasks({ transitions, queues, inputs: [input], tenant: 'planner', room: limits(size) }),
    ).toHaveLength(1);
    expect(await written('planner')).toBe(size);
  });

  it('refuses a submit past the byte limit whole, over several calls, and stores all of one that fits', async () => {
    // 450 tasks of about 1.5 KB: three CREATE calls.
    const big = bytesInputs(450, 'z'.repeat(1_000));
    const limits = (bytes: number): RoomLimits => ({ unfinished: 10_000, stored: 10_000, bytes });
    const refused = await submitTasks({
      transitions,
      queues,
      inputs: big,
      tenant: 'quota',
      room: limits(bytesOf(big) - 1),
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoRoomError);
    expect(refused).toMatchObject({ limit: 'bytes', bytes: { used: 0, requested: bytesOf(big) } });
    expect(await store.redis.zcard(keys.cells[0]!.tenantTasks('quota'))).toBe(0);
    expect(await written('quota')).toBe(0);

    expect(
      await submitTasks({ transitions, queues, inputs: big, tenant: 'quota', room: limits(bytesOf(big)) }),
    ).toHaveLength(450);
    expect(await written('quota')).toBe(bytesOf(big));
    // Nothing is left held once the later calls took their share.
    expect(await store.redis.exists(keys.cells[0]!.tenantRoomHeldBytes('quota'))).toBe(0);
    // Full: one more task of any size is refused, and says how much is written.
    await expect(
      transitions.submit(bytesInputs(1, 'small'), { tenant: 'quota', room: { limits: limits(bytesOf(big)) } }),
    ).rejects.toMatchObject({ limit: 'bytes', bytes: { used: bytesOf(big) } });
  });

  it("counts the bytes a submit's first call holds for its later calls as taken, until they take them", async () => {
    const parts = [bytesInputs(100, 'first part'), bytesInputs(150, 'second part')];
    const all = bytesOf(parts.flat());
    const limits: RoomLimits = { unfinished: 10_000, stored: 10_000, bytes: all + 600 };
    const claim = { id: 'submit-bytes', tasks: 250, bytes: all };
    await transitions.submit(parts[0]!, { tenant: 'held-bytes', room: { limits, claim: { ...claim, first: true } } });
    expect(Number(await store.redis.zscore(keys.cells[0]!.tenantRoomHeldBytes('held-bytes'), 'submit-bytes'))).toBe(
      bytesOf(parts[1]!),
    );
    // Without the hold a 700-byte task would fit; with it, it does not.
    const between = [{ prompt: 'b'.repeat(700 - createdBytes({ prompt: '' })), agent: 'casual' as const }];
    await expect(transitions.submit(between, { tenant: 'held-bytes', room: { limits } })).rejects.toMatchObject({
      limit: 'bytes',
      bytes: { used: all },
    });
    await transitions.submit(parts[1]!, { tenant: 'held-bytes', room: { limits, claim: { ...claim, first: false } } });
    expect(await store.redis.exists(keys.cells[0]!.tenantRoomHeldBytes('held-bytes'))).toBe(0);
    expect(await written('held-bytes')).toBe(all);
    // 600 bytes are left: a task of 600 fits, the 700 still does not.
    await expect(transitions.submit(between, { tenant: 'held-bytes', room: { limits } })).rejects.toThrow(NoRoomError);
    expect(
      await transitions.submit([{ prompt: 'c'.repeat(600 - createdBytes({ prompt: '' })), agent: 'casual' }], {
        tenant: 'held-bytes',
        room: { limits },
      }),
    ).toHaveLength(1);
  });
});

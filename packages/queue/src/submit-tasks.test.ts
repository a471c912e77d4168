/** A submission's records and jobs, chunked and overlapped, against a real Redis and real BullMQ queues. */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues } from './agent-queues.js';
import { createKeys } from './keys.js';
import { countByStatus } from './task-index.js';
import { connectRedis } from './redis-connection.js';
import { EnqueueError, submitTasks } from './submit-tasks.js';
import { TaskStore } from './task-store.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('submit');
const keys = createKeys(prefix);
let store: TaskStore;
let transitions: Transitions;
let queues: AgentQueues;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  transitions = new Transitions(store);
  queues = createAgentQueues({ connection: store.redis, keys });
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

describe('submitting tasks', () => {
  it('stores every task and gives it to its tenant’s turn (a backlog of jobs, the rest waiting), over several chunks, in the order given', async () => {
    const inputs = Array.from({ length: 1_234 }, (_, index) => ({ prompt: `task ${index}`, agent: index % 2 ? ('casual' as const) : ('coder' as const) }));
    const tasks = await submitTasks({ transitions, queues, inputs, tenant: 'acme' });
    expect(tasks).toHaveLength(inputs.length);
    const records = await Promise.all(tasks.map((task) => store.getRecord(task.id)));
    expect(records.map((record) => record?.prompt)).toEqual(inputs.map((input) => input.prompt));
    // Each task has its job, or waits in its tenant's list for the pool; the queues hold the backlog only.
    const jobs = await Promise.all(tasks.map((task) => queues[task.agent].getJob(task.id)));
    const waiting = await Promise.all(tasks.map((task) => store.redis.zscore(keys.fairList(task.agent, 'acme'), task.id)));
    expect(tasks.every((task, index) => (jobs[index]?.data.taskId === task.id) !== (waiting[index] !== null))).toBe(true);
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
    const jobs = await Promise.all(tasks.map((task) => queues[task.agent].getJob(task.id)));
    expect(jobs.map((job) => job?.data.taskId)).toEqual(tasks.map((task) => task.id));
  });

  it('takes a turn for each chunk’s pools: a pool a later chunk fills is admitted up to its backlog', async () => {
    // Queues of their own: how many jobs the pool holds is this test's alone.
    const ownPrefix = freshPrefix('submit-mixed');
    const ownKeys = createKeys(ownPrefix);
    const ownStore = new TaskStore(connectRedis({ url: redisUrl() }), ownKeys);
    const ownQueues = createAgentQueues({ connection: ownStore.redis, keys: ownKeys });
    try {
      // The first chunk has one web task among 199 others; the second has 150 more.
      const inputs = [
        ...Array.from({ length: 199 }, (_, index) => ({ prompt: `casual ${index}`, agent: 'casual' as const })),
        ...Array.from({ length: 151 }, (_, index) => ({ prompt: `web ${index}`, agent: 'web' as const })),
      ];
      await submitTasks({ transitions: new Transitions(ownStore), queues: ownQueues, inputs, tenant: 'epsilon' });
      expect(await ownQueues.web.getJobCountByTypes('wait', 'prioritized')).toBe(100);
      expect(await ownQueues.casual.getJobCountByTypes('wait', 'prioritized')).toBe(100);
    } finally {
      await closeQueues(ownQueues);
      ownStore.redis.disconnect();
      await deletePrefix(ownPrefix);
    }
  });

  it('lists every stored task in its tenant’s turn in the same call: a failed turn right after loses none', async () => {
    const failingTurn = Object.assign(Object.create(queues.admission) as object, { admit: () => Promise.reject(new Error('the queue is gone')) });
    const broken = { ...queues, admission: failingTurn } as unknown as AgentQueues;
    const inputs = Array.from({ length: 250 }, (_, index) => ({ prompt: `listed ${index}`, agent: 'file' as const }));
    const tasks = await submitTasks({ transitions, queues: broken, inputs, tenant: 'gamma' });
    expect(tasks).toHaveLength(250);
    // Stored, queued, in their tenant's list, and no job yet.
    expect((await countByStatus(store.redis, keys.tenantTasks('gamma'))).queued).toBe(250);
    expect(await store.redis.zcard(keys.fairList('file', 'gamma'))).toBe(250);
    expect(await queues.file.getJob(tasks[0]!.id)).toBeUndefined();
    // The next turn (every worker takes one each second) gives the first of them their jobs, the backlog's worth.
    expect(await queues.admission.admit('file')).toBe(100);
    expect((await queues.file.getJob(tasks[0]!.id))?.data.taskId).toBe(tasks[0]!.id);
    expect(await store.redis.zcard(keys.fairList('file', 'gamma'))).toBe(150);
  });

  it('fails the tasks of the other chunks when a chunk could not be stored, and keeps those with an idempotency key queued for the retry', async () => {
    let calls = 0;
    const flaky = Object.assign(Object.create(transitions) as object, {
      submit: (...args: Parameters<Transitions['submit']>) => (++calls === 2 ? Promise.reject(new Error('Redis said no')) : transitions.submit(...args)),
    }) as Transitions;
    const inputs = [
      ...Array.from({ length: 449 }, (_, index) => ({ prompt: `casual ${index}`, agent: 'casual' as const })),
      { prompt: 'coder with key', agent: 'coder' as const, idempotencyKey: 'retry-me' },
    ];
    const failure = await submitTasks({ transitions: flaky, queues, inputs, tenant: 'beta' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EnqueueError);
    expect((failure as Error).message).toContain('Redis said no');
    const statuses = async (status: 'failed' | 'queued') => (await store.list({ tenant: 'beta', status, limit: 500 })).tasks;
    // The first chunk (200) and the last but one (49 of the last 50) are failed: nothing of them runs.
    expect((await countByStatus(store.redis, keys.tenantTasks('beta'))).failed).toBe(249);
    expect((await statuses('failed')).every((task) => task.error?.code === 'enqueue_failed')).toBe(true);
    expect((await statuses('queued')).map((task) => task.prompt)).toEqual(['coder with key']);
    // What had not had its turn yet left its tenant's list.
    expect(await store.redis.zcard(keys.fairList('casual', 'beta'))).toBe(0);
  });
});

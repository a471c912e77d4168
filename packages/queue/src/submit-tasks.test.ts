/** A submission's records and jobs, chunked and overlapped, against a real Redis and real BullMQ queues. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  it('fails the tasks it could not queue, in every chunk, and keeps those with an idempotency key queued for the retry', async () => {
    const broken = { ...queues, admission: { add: () => Promise.reject(new Error('the queue is gone')) } } as unknown as AgentQueues;
    const inputs = [
      ...Array.from({ length: 900 }, (_, index) => ({ prompt: `casual ${index}`, agent: 'casual' as const })),
      { prompt: 'coder', agent: 'coder' as const },
      { prompt: 'coder with key', agent: 'coder' as const, idempotencyKey: 'retry-me' },
    ];
    const failure = await submitTasks({ transitions, queues: broken, inputs, tenant: 'beta' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EnqueueError);
    expect((failure as Error).message).toContain('the queue is gone');
    const statuses = async (status: 'failed' | 'queued') => (await store.list({ tenant: 'beta', status, limit: 500 })).tasks;
    // Nothing runs while the client is told to submit again: every task without a key failed.
    expect((await countByStatus(store.redis, keys.tenantTasks('beta'))).failed).toBe(901);
    expect((await statuses('failed')).every((task) => task.error?.code === 'enqueue_failed')).toBe(true);
    expect((await statuses('queued')).map((task) => task.prompt)).toEqual(['coder with key']);
  });
});

/** Answering a waiting task against a real Redis and real BullMQ queues: its new job is added, even when the process answering it dies first. */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues } from '@agentq/scheduling';
import { answerTask } from './answer-task.js';
import { createKeys, connectRedis, TaskStore } from '@agentq/store';

const prefix = freshPrefix('answer');
const keys = createKeys(prefix);
let store: TaskStore;
let queues: AgentQueues;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  // Leases that run out at once: what a dead process leaves is recovered by the next `recover`.
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: store.redis,
    keys,
    fair: { leaseMs: 0 },
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

/** A task of the casual pool waiting on its model's question. */
async function waitingTask(): Promise<string> {
  const id = randomUUID();
  const pending = JSON.stringify({ callId: 'call-1', protocol: 'native', question: 'Which file?' });
  await store.create([{ fields: { id, rootId: id, status: 'waiting', agent: 'casual', tenant: 'acme', pending } }]);
  return id;
}

const recover = () => queues.cells[0]!.admission.recover('casual', (ids) => store.leasedTasks(ids));

it('queues an answered task again as its next job, once, and leaves no lease behind', async () => {
  const taskId = await waitingTask();
  expect(await answerTask({ store, queues, taskId, text: 'notes.md' })).toEqual({
    found: true,
    status: 'queued',
    answered: true,
  });
  const job = await queues.cells[0]!.queue('casual').getJob(`${taskId}-r1`);
  expect(job?.data).toEqual({ taskId, tenant: 'acme' });
  expect(await store.redis.zscore(keys.cells[0]!.fairLeases('casual'), taskId)).toBeNull();
  // A second answer finds it queued: refused, nothing added.
  expect(await answerTask({ store, queues, taskId, text: 'again' })).toEqual({
    found: true,
    status: 'queued',
    answered: false,
  });
  expect(await recover()).toBe(0);
  const memory = await store.redis.lrange(keys.messages(taskId), 0, -1);
  expect(memory.map((entry) => JSON.parse(entry) as { content: string })).toMatchObject([
    { role: 'tool', toolCallId: 'call-1', content: 'The user answered: notes.md' },
  ]);
});

it('adds the job of an answered task whose process died before adding it: a worker recovers it, as the job the record names', async () => {
  const taskId = await waitingTask();
  // The answer is committed; the process is gone before its job is added.
  vi.spyOn(queues.cells[0]!.queue('casual'), 'addBulk').mockRejectedValueOnce(new Error('the API process died'));
  await expect(answerTask({ store, queues, taskId, text: 'notes.md' })).rejects.toThrow('the API process died');
  const record = await store.getRecord(taskId);
  expect(record).toMatchObject({ status: 'queued', jobId: `${taskId}-r1`, resumes: 1 });
  expect(await queues.cells[0]!.queue('casual').getJob(`${taskId}-r1`)).toBeUndefined();
  // The user cannot answer again (it is queued): only the lease brings it back.
  expect((await answerTask({ store, queues, taskId, text: 'again' })).answered).toBe(false);
  expect(await recover()).toBe(1);
  const job = await queues.cells[0]!.queue('casual').getJob(`${taskId}-r1`);
  expect(job?.data).toEqual({ taskId, tenant: 'acme' });
  expect(await store.redis.zcard(keys.cells[0]!.fairLeases('casual'))).toBe(0);
});

it('leases nothing when the answer is refused', async () => {
  const taskId = await waitingTask();
  await store.commit({ taskId, tenant: 'acme', expect: ['waiting'], status: 'cancelled' });
  expect(await answerTask({ store, queues, taskId, text: 'too late' })).toEqual({
    found: true,
    status: 'cancelled',
    answered: false,
  });
  expect(await store.redis.zscore(keys.cells[0]!.fairLeases('casual'), taskId)).toBeNull();
  expect(await recover()).toBe(0);
});

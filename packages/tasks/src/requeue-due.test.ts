/**
 * A run that must wait requeues its task as due (due-tasks.ts), against a real Redis and real BullMQ
 * queues: the task comes back through admission as its next job, a job a crashed worker left behind
 * claims nothing, a waiting task counts as delayed, and a cancel takes it out of the due set.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, dueMember, type AgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { cancelTask } from './cancel-task.js';
import { submitTasks } from './submit-tasks.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('requeue-due');
const keys = createKeys(prefix);
let store: TaskStore;
let transitions: Transitions;
let queues: AgentQueues;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  transitions = new Transitions(store);
  queues = createAgentQueues({ pools: ['planner', 'casual'], connection: store.redis, keys });
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

/** Submits a task, claims it as its first job, and requeues it as due in `ms`, to run as `<task>-r1`. */
async function waitingTask(ms: number) {
  const [task] = await submitTasks({
    transitions,
    queues,
    inputs: [{ prompt: 'wait', agent: 'casual' }],
    tenant: 'acme',
  });
  const id = task!.id;
  const run = { runToken: randomUUID(), worker: 'w' };
  expect((await transitions.claim({ id, tenant: 'acme' }, { ...run, job: id })).applied).toBe(true);
  const member = dueMember({ pool: 'casual', taskId: id, tenant: 'acme', priority: 5 });
  const requeued = await transitions.requeue(
    { id, tenant: 'acme', listed: true },
    {
      ...run,
      why: { kind: 'retry', retry: 2, message: 'broken answer' },
      next: {
        jobId: `${id}-r1`,
        resumes: 1,
        retries: 1,
        due: { ...queues.of(id).admission.dueOf('casual'), ms, member },
      },
    },
  );
  expect(requeued.applied).toBe(true);
  return { id, member };
}

it('runs a task that waited as its next job, through admission, and never as the job it left', async () => {
  const { id } = await waitingTask(0);
  expect(await store.getRecord(id)).toMatchObject({ status: 'queued', jobId: `${id}-r1`, resumes: 1, retries: 1 });
  // Its worker died before its job ended: BullMQ runs that job again, which claims nothing.
  const stale = await transitions.claim({ id, tenant: 'acme' }, { runToken: randomUUID(), worker: 'w', job: id });
  expect(stale.applied).toBe(false);
  expect((await store.getRecord(id))?.status).toBe('queued');
  // Due: the next turn admits it as `<task>-r1`, which claims it.
  await queues.of(id).admission.admit('casual');
  expect(await queues.of(id).queue('casual').getJob(`${id}-r1`)).toMatchObject({ data: { taskId: id } });
  expect(await store.redis.zcard(keys.cells[0]!.fairDue('casual'))).toBe(0);
  const next = await transitions.claim(
    { id, tenant: 'acme' },
    { runToken: randomUUID(), worker: 'w', job: `${id}-r1` },
  );
  expect(next.applied).toBe(true);
});

it('cancels a task while it waits to be due: it leaves the due set and never runs', async () => {
  const { id, member } = await waitingTask(3_600_000);
  expect(await store.redis.zscore(keys.cells[0]!.fairDue('casual'), member)).not.toBeNull();
  // The pool counts it as delayed, as it counted its job when it waited delayed.
  expect((await queues.jobCounts('casual', 'delayed')).delayed).toBe(1);
  const cancelled = await cancelTask({ store, queues, publisher: store.redis, taskId: id });
  expect(cancelled.status).toBe('cancelled');
  expect(await store.redis.zscore(keys.cells[0]!.fairDue('casual'), member)).toBeNull();
  expect(await store.redis.hget(keys.cells[0]!.fairRuns('casual'), id)).toBeNull();
  expect((await queues.jobCounts('casual', 'delayed')).delayed).toBe(0);
});

/** Fair admission against a real Redis and real BullMQ queues: weighted turns, priorities within a tenant, no banked credit, withdraw, recovery. */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeEach, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues } from './agent-queues.js';
import { dueMember, wakeWaiters } from './due-tasks.js';
import { createKeys, type Keys, connectRedis } from '@agentq/store';

const prefixes: string[] = [];
let redis: Redis;
let keys: Keys;
let queues: AgentQueues;

/** Task ids are UUIDs: each test task's is told apart by its label (`<tenant>-<priority>-<n>`). */
const labels = new Map<string, string>();
const idOf = new Map<string, string>();

function tasks(tenant: string, count: number, priority = 5) {
  return Array.from({ length: count }, (_, index) => {
    const label = `${tenant}-${priority}-${index}`;
    const taskId = idOf.get(label) ?? randomUUID();
    labels.set(taskId, label);
    idOf.set(label, taskId);
    return { taskId, tenant, pool: 'casual' as const, priority };
  });
}

async function queued(): Promise<string[]> {
  // In the order the pool runs them.
  return (await queues.cells[0]!.queue('casual').getJobs(['prioritized', 'wait'], 0, -1, true)).map((job) =>
    labels.get(job.id!)!,
  );
}

beforeEach(() => {
  const prefix = freshPrefix('fair');
  prefixes.push(prefix);
  keys = createKeys(prefix);
  redis = connectRedis({ url: redisUrl() });
});
afterEach(async () => {
  await closeQueues(queues);
  redis.disconnect();
});
afterAll(async () => {
  for (const prefix of prefixes) await deletePrefix(prefix);
});

it('admits a backlog only, in weighted turns, each tenant’s highest priority first', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    fair: { backlog: 40, weights: { acme: 3 } },
  });
  await queues.cells[0]!.admission.add([...tasks('acme', 50), ...tasks('acme', 10, 9), ...tasks('beta', 60)]);
  const admitted = await queued();
  expect(admitted).toHaveLength(40);
  expect(admitted.filter((id) => id.startsWith('acme'))).toHaveLength(30);
  expect(admitted.filter((id) => id.startsWith('beta'))).toHaveLength(10);
  // acme's priority-9 tasks went in first of its own.
  expect(admitted.filter((id) => id.startsWith('acme-9'))).toHaveLength(10);
  expect(await queues.cells[0]!.admission.waiting('casual')).toEqual({ acme: 30, beta: 50 });
  // Nothing more fits until jobs leave the queue.
  expect(await queues.cells[0]!.admission.admit('casual')).toBe(0);
});

it('lets a tenant that arrives take turns at once, with no credit for having been away', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    fair: { backlog: 20 },
  });
  await queues.cells[0]!.admission.add(tasks('acme', 1_000));
  expect(await queued()).toHaveLength(20);
  await queues.cells[0]!.queue('casual').obliterate({ force: true });
  await queues.cells[0]!.admission.add(tasks('beta', 30));
  // The 20 places are shared: beta does not get them all for acme's head start, nor wait for acme's 980.
  const admitted = await queued();
  expect(admitted.filter((id) => id.startsWith('beta'))).toHaveLength(10);
  expect(admitted.filter((id) => id.startsWith('acme'))).toHaveLength(10);
});

it('withdraws a task not admitted yet, and admits again what a process popped and never queued', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    fair: { backlog: 1, leaseMs: 1 },
  });
  await queues.cells[0]!.admission.add(tasks('acme', 3));
  expect(await queues.cells[0]!.admission.withdraw('casual', 'acme', idOf.get('acme-5-1')!)).toBe(true);
  expect(await queues.cells[0]!.admission.withdraw('casual', 'acme', idOf.get('acme-5-0')!)).toBe(false);
  // A process that popped acme-5-2 and died before adding its job: its lease runs out.
  await queues.cells[0]!.queue('casual').obliterate({ force: true });
  await redis.zadd(keys.cells[0]!.fairLeases('casual'), 0, idOf.get('acme-5-2')!);
  await redis.zrem(keys.cells[0]!.fairList('casual', 'acme'), idOf.get('acme-5-2')!);
  const recovered = await queues.cells[0]!.admission.recover('casual', async (ids) =>
    ids.map(() => ({ tenant: 'acme', priority: 5, queued: true })),
  );
  expect(recovered).toBe(1);
  expect(await queued()).toEqual(['acme-5-2']);
  expect(await redis.zcard(keys.cells[0]!.fairLeases('casual'))).toBe(0);
});

it('takes a tenant’s whole turn at once, in the same turns as one at a time, and folds the asks of a burst of jobs into one cycle', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    fair: { backlog: 100, weights: { acme: 2 } },
  });
  await queues.cells[0]!.admission.add(tasks('acme', 300));
  await queues.cells[0]!.queue('casual').obliterate({ force: true });
  await queues.cells[0]!.admission.add(tasks('beta', 300));
  // acme's turns are taken two at a time to beta's one, each tenant's head as a whole: 67 and 33 of 100.
  const admitted = await queued();
  expect(admitted.filter((id) => id.startsWith('acme'))).toHaveLength(67);
  expect(admitted.filter((id) => id.startsWith('beta'))).toHaveLength(33);
  // In each tenant's order of arrival, with no task twice.
  expect(admitted.filter((id) => id.startsWith('beta'))).toEqual(
    Array.from({ length: 33 }, (_, index) => `beta-5-${index}`),
  );
  expect(new Set(admitted).size).toBe(100);
  await queues.cells[0]!.queue('casual').obliterate({ force: true });
  // A worker asks after each job it ends: the asks of a burst share one cycle.
  const asks = Array.from({ length: 50 }, () => queues.cells[0]!.admission.admitSoon('casual', 5));
  expect(new Set(asks).size).toBe(1);
  expect(await asks[0]).toBe(100);
  expect(await queued()).toHaveLength(100);
  // Once stopped (its worker closing), what was asked for is called off, and nothing more starts.
  await queues.cells[0]!.queue('casual').obliterate({ force: true });
  const late = queues.cells[0]!.admission.admitSoon('casual', 5);
  queues.cells[0]!.admission.stop();
  expect(await late).toBe(0);
  expect(await queues.cells[0]!.admission.admitSoon('casual', 5)).toBe(0);
  expect(await queued()).toHaveLength(0);
});

it('after a cycle that admitted nothing, waits for a batch of job ends before the next, and the tick still turns', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    // A batch is a tenth of the backlog: 10.
    fair: { backlog: 100 },
  });
  const admission = queues.cells[0]!.admission;
  const queue = queues.cells[0]!.queue('casual');
  const leave = async (count: number) => {
    const waiting = await queue.getJobs(['wait'], 0, count - 1, true);
    await Promise.all(waiting.map((job) => job.remove()));
  };
  await admission.add(tasks('acme', 150));
  expect(await queued()).toHaveLength(100);
  // A job ends: no room, nothing admitted.
  expect(await admission.admitSoon('casual', 1)).toBe(0);
  // 15 jobs start elsewhere, and this worker's next 9 jobs end: none of those ends takes a cycle.
  await leave(15);
  for (let end = 0; end < 9; end++) expect(await admission.admitSoon('casual', 1)).toBe(0);
  expect(await queued()).toHaveLength(85);
  // The tick takes its cycle whatever came before.
  expect(await admission.admit('casual')).toBe(15);
  // After a cycle that admitted, the next job end takes one at once.
  await leave(12);
  expect(await admission.admitSoon('casual', 1)).toBe(12);
  // Nothing admitted again (no room): the tenth job end from now takes the next cycle.
  expect(await admission.admitSoon('casual', 1)).toBe(0);
  await leave(20);
  for (let end = 0; end < 9; end++) expect(await admission.admitSoon('casual', 1)).toBe(0);
  expect(await admission.admitSoon('casual', 1)).toBe(20);
  expect(await admission.waiting('casual')).toEqual({ acme: 3 });
});

it('takes a task back from the due set once due, by its tenant’s turn, as its next job', async () => {
  queues = createAgentQueues({
    pools: ['planner', 'coder', 'file', 'casual', 'web'],
    connection: redis,
    keys,
    fair: { backlog: 4 },
  });
  const admission = queues.cells[0]!.admission;
  const queue = queues.cells[0]!.queue('casual');
  await admission.add(tasks('acme', 10));
  expect(await queued()).toHaveLength(4);
  await queue.obliterate({ force: true });
  // A task of beta's waits (its model's endpoint down): due in an hour, unless woken.
  const [late] = tasks('beta', 1);
  const member = dueMember({ pool: 'casual', taskId: late!.taskId, tenant: 'beta', priority: 5 });
  await redis.zadd(keys.cells[0]!.fairDue('casual'), Date.now() + 3_600_000, member);
  await redis.hset(keys.cells[0]!.fairRuns('casual'), late!.taskId, `${late!.taskId}-r1`);
  expect(await admission.admit('casual')).toBe(4);
  expect(await queued()).not.toContain('beta-5-0');
  await queue.obliterate({ force: true });
  // Woken: due now, and it takes beta's turn, ahead of acme's last two, as job `<task>-r1`.
  await wakeWaiters(queues, [member]);
  const admitted = await queue.getJobs(['wait'], 0, -1, true);
  expect(admitted.map((job) => job.id)).toContain(`${late!.taskId}-r1`);
  expect(admitted).toHaveLength(3);
  expect(await redis.zcard(keys.cells[0]!.fairDue('casual'))).toBe(0);
});

it('wakes a waiter that waits as a delayed job (a planned task’s end, or listed by an older version) by promoting it', async () => {
  queues = createAgentQueues({ pools: ['planner', 'casual'], connection: redis, keys });
  const queue = queues.cells[0]!.queue('casual');
  const [first, second] = tasks('acme', 2);
  for (const task of [first!, second!])
    await queue.add('agent', { taskId: task.taskId }, { jobId: task.taskId, delay: 3_600_000 });
  await wakeWaiters(queues, [
    dueMember({ pool: 'casual', taskId: first!.taskId, tenant: 'acme', priority: 5, delayedJob: first!.taskId }),
    JSON.stringify(['casual', second!.taskId, second!.taskId]),
  ]);
  expect(await queue.getJobState(first!.taskId)).toBe('waiting');
  expect(await queue.getJobState(second!.taskId)).toBe('waiting');
});

it('admits a turn of more than Lua can unpack at once while a task that waited comes back', async () => {
  queues = createAgentQueues({ pools: ['casual'], connection: redis, keys, fair: { backlog: 20_000 } });
  const admission = queues.cells[0]!.admission;
  const [back] = tasks('beta', 1);
  const member = dueMember({ pool: 'casual', taskId: back!.taskId, tenant: 'beta', priority: 5 });
  await redis.zadd(keys.cells[0]!.fairDue('casual'), Date.now() - 1, member);
  await redis.hset(keys.cells[0]!.fairRuns('casual'), back!.taskId, `${back!.taskId}-r1`);
  // 9,000 of acme's in one turn: its ids' next runs are asked in one script (Lua unpacks about 8,000).
  await admission.add(tasks('acme', 9_000));
  const jobs = await queues.cells[0]!.queue('casual').getJobs(['wait'], 0, -1, true);
  expect(jobs).toHaveLength(9_001);
  expect(jobs.map((job) => job.id)).toContain(`${back!.taskId}-r1`);
}, 60_000);

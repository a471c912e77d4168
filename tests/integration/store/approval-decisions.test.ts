/**
 * Decisions on calls awaiting approval, against a real Redis: decisions made at the same moment are
 * never lost (each is written only if the task is as its decider read it), each call is decided
 * once, and the last decision queues the task again with its job.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeQueues, createAgentQueues, type AgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { decideApproval } from '../../../packages/tasks/src/decide-approval.js';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';

const prefix = freshPrefix('decisions');
let store: TaskStore;
let queues: AgentQueues;
let transitions: Transitions;

beforeAll(() => {
  const keys = createKeys(prefix);
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  queues = createAgentQueues({ pools: ['ops'], connection: connectRedis({ url: redisUrl() }), keys });
  transitions = new Transitions(store);
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

const calls = ['a', 'b', 'c', 'd'].map((id) => ({ id, name: 'bash', arguments: '{}', rule: 'every bash call' }));

async function waitingForApprovals() {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'ops' }], { tenant: 'acme' });
  const record = (await store.getRecord(created!.id))!;
  await transitions.claim(record, { runToken: 'run' });
  await transitions.wait(record, { runToken: 'run', pending: { kind: 'approval', step: 1, calls }, steps: 1 });
  return record.id;
}

it('loses no decision made at the same moment, decides each call once, and queues the task after the last', async () => {
  const taskId = await waitingForApprovals();
  // Every read goes out before any write: without the check of what was read, the writes undo one another.
  const outcomes = await Promise.all(
    [...calls, ...calls].map((call, index) =>
      decideApproval({ store, queues, taskId, callId: call.id, decision: { approve: index % 2 === 0 } }),
    ),
  );
  expect(outcomes.filter((outcome) => outcome.kind === 'decided')).toHaveLength(4);
  // The others found their call decided, or (once the last one was) the task queued again.
  expect(outcomes.filter((outcome) => ['decided_already', 'not_waiting'].includes(outcome.kind))).toHaveLength(4);
  expect(outcomes.filter((outcome) => outcome.kind === 'decided' && outcome.remaining === 0)).toHaveLength(1);

  const record = (await store.getRecord(taskId))!;
  expect(record.status).toBe('queued');
  expect([...record.decisions!.calls.keys()].sort()).toEqual(['a', 'b', 'c', 'd']);
  expect(record.decisions!.step).toBe(1);
  const job = await queues.cells[0]!.queue('ops').getJob(record.jobId!);
  expect(job?.data).toMatchObject({ taskId });
});

it("refuses another tenant's task as missing, and a call that does not wait", async () => {
  const taskId = await waitingForApprovals();
  expect(
    await decideApproval({ store, queues, taskId, callId: 'a', decision: { approve: true }, tenant: 'other' }),
  ).toEqual({ kind: 'missing' });
  expect(await decideApproval({ store, queues, taskId, callId: 'z', decision: { approve: true } })).toEqual({
    kind: 'unknown_call',
    waiting: ['a', 'b', 'c', 'd'],
  });
  expect((await store.getRecord(taskId))!.decisions).toBeUndefined();
});

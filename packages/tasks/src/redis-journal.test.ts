/**
 * The journal over Redis names a refused write (the commit script's outcome) to the loop: a run that
 * lost its task learns it lost it, and why, instead of a cancel nobody asked for.
 */
import { RunLostError } from '@agentq/core';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { createRedisJournal } from './redis-journal.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('journal');
let store: TaskStore;
let transitions: Transitions;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), createKeys(prefix));
  transitions = new Transitions(store);
});
afterAll(async () => {
  store.redis.disconnect();
  await deletePrefix(prefix);
});

async function claimed(runToken: string) {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await transitions.claim(task, { runToken });
  return task;
}

const journalOf = (taskId: string, runToken: string, cancels: boolean[] = []) =>
  createRedisJournal({
    store,
    taskId,
    tenant: 'acme',
    agent: 'casual',
    worker: 'w1',
    runToken,
    onCommit: (_entry, { cancelRequested }) => cancels.push(cancelRequested),
  });

describe('the Redis journal', () => {
  it('writes while the run holds its task', async () => {
    const task = await claimed('mine');
    const cancels: boolean[] = [];
    await journalOf(task.id, 'mine', cancels).commit({ messages: [{ role: 'user', content: 'hi' }] });
    expect(await store.messages(task.id)).toEqual([{ role: 'user', content: 'hi' }]);
    expect(cancels).toEqual([false]);
  });

  it("writes an approved call's start at once, into the task's record, even when asked to hold it", async () => {
    const task = await claimed('mine');
    const startedCalls = { step: 2, ids: ['deploy', 'call_2_2'] };
    await journalOf(task.id, 'mine').commit({ startedCalls, lazy: true });
    expect((await store.getRecord(task.id))!.startedCalls).toEqual(startedCalls);
  });

  it('rejects with taken_over once another run holds the task, writing nothing', async () => {
    const task = await claimed('first');
    await transitions.claim(task, { runToken: 'second' });
    const cancels: boolean[] = [];
    const write = journalOf(task.id, 'first', cancels).commit({ messages: [{ role: 'user', content: 'late' }] });
    await expect(write).rejects.toBeInstanceOf(RunLostError);
    await expect(write).rejects.toMatchObject({ reason: 'taken_over', status: 'running' });
    expect(await store.messages(task.id)).toEqual([]);
    // Not told as a cancel: nobody asked this run to stop.
    expect(cancels).toEqual([]);
  });

  it('rejects with moved_on when the task ended without this run', async () => {
    const task = await claimed('mine');
    await transitions.complete(task, { runToken: 'mine', result: 'done elsewhere' });
    await expect(
      journalOf(task.id, 'mine').commit({ messages: [{ role: 'user', content: 'late' }] }),
    ).rejects.toMatchObject({ code: 'run_lost', reason: 'moved_on', status: 'completed' });
  });

  it('rejects with gone for a task that no longer exists', async () => {
    const task = await claimed('mine');
    await store.redis.del(store.keys.task(task.id));
    await expect(journalOf(task.id, 'mine').commit({ messages: [] })).rejects.toMatchObject({ reason: 'gone' });
  });
});

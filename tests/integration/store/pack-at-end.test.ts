/**
 * A run that ends packs its task's events in its end commit (run-events.ts), against a real Redis:
 * the replay is the same as from the list, to the byte; the task never joins the to-compact set; and
 * wherever the run's copy may not be whole (another writer's event, a task compacted before, a run
 * resumed by another process), the end falls back to a compaction, and no event is lost.
 */
import { readFileSync } from 'node:fs';
import { deflateRawSync } from 'node:zlib';
import { expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { compactEvents, TaskStore, type TaskRecord } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { deflateOpen, inflatePacked } from '../../../packages/store/src/task-events.js';
import { storeOnPrefix } from '../../helpers/store-on-prefix.js';

const { keys, store, transitions } = storeOnPrefix('pack');

/** A claimed task whose run wrote three steps' events, some text in it that JSON escapes. */
async function runningTask(runToken: string, runStore = store, prompt = 'p') {
  const [created] = await transitions.submit([{ prompt, agent: 'casual' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await new Transitions(runStore).claim(task, { runToken });
  for (let step = 1; step <= 3; step++)
    await runStore.commit({
      taskId: task.id,
      tenant: 'acme',
      runToken,
      events: [
        { type: 'reasoning', step, data: { text: `step ${step}: "quotes", \\ / é 🙂 \u2028 ${'x'.repeat(100)}` } },
      ],
    });
  return task;
}

/** Runs an ended task again, as a retry does: queued, claimed by `runToken`, one event written. */
async function runAgain(task: TaskRecord, runToken: string) {
  await store.commit({
    taskId: task.id,
    tenant: 'acme',
    status: 'queued',
    events: [{ type: 'task.queued', data: {} }],
  });
  await transitions.claim(task, { runToken });
  await store.commit({
    taskId: task.id,
    tenant: 'acme',
    runToken,
    events: [{ type: 'reasoning', data: { text: 'again' } }],
  });
}

/** A task's events now: those of `first` before, then more, numbered without a gap. */
async function expectFollowing(taskId: string, first: TaskEvent[]) {
  const all = await store.events(taskId);
  expect(all.slice(0, first.length)).toEqual(first);
  expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
  return all;
}

/** Where a task's events are: a list left (to compact) or not, and whether it is to be compacted. */
const packed = async (taskId: string) => ({
  list: await store.redis.exists(keys.events(taskId)),
  toCompact: await store.redis.zscore(keys.cells[0]!.toCompact, taskId),
});

it('packs the events in the end commit: the same replay, to the byte, and nothing left to compact', async () => {
  const task = await runningTask('run-a');
  const live = await store.storedEvents(task.id);
  await transitions.complete(task, { runToken: 'run-a', result: 'done' });
  expect(await packed(task.id)).toEqual({ list: 0, toCompact: null });
  // Written whole from the run's copy, its first event's line (its record's copy) included: it begins
  // deflated, not with the stored block its create wrote; and the record's copy is emptied.
  expect((await store.redis.getBuffer(keys.packedEvents(task.id)))![0]).not.toBe(0);
  expect(await store.redis.hget(keys.task(task.id), 'first')).toBe('');
  // Its copy was short: the small record kept Redis's compact encoding (a long value makes it a table).
  expect(await store.redis.object('ENCODING', keys.task(task.id))).toBe('listpack');
  // Written whole: an appended string keeps about twice its length allocated, for more appends.
  const length = await store.redis.strlen(keys.packedEvents(task.id));
  expect(Number(await store.redis.memory('USAGE', keys.packedEvents(task.id)))).toBeLessThan(1.3 * length + 100);
  const replay = await store.storedEvents(task.id);
  expect(replay.map((stored) => stored.event.seq)).toEqual(replay.map((_, index) => index + 1));
  expect(replay.slice(0, live.length).map((stored) => stored.text)).toEqual(live.map((stored) => stored.text));
  expect(replay.at(-1)!.event.type).toBe('task.completed');
  // The text as the script would have written it: a compaction of the same events stores the same bytes.
  const again = await runningTask('run-b');
  store.runEvents.drop('run-b');
  await transitions.complete(again, { runToken: 'run-b', result: 'done' });
  await compactEvents({ redis: store.redis, keys });
  const compacted = await store.storedEvents(again.id);
  const shape = (text: string) => text.replaceAll(again.id, 'ID').replace(/"ts":"[^"]+"/g, '');
  expect(compacted.map((stored) => shape(stored.text))).toEqual(
    replay.map((stored) => shape(stored.text.replaceAll(task.id, again.id))),
  );
  expect(store.runEvents.size).toBe(0);
});

it("falls back to a compaction when another writer's event came during the run, and loses none", async () => {
  const task = await runningTask('run-c');
  await store.commit({
    taskId: task.id,
    tenant: 'acme',
    events: [{ type: 'reasoning', data: { text: 'from elsewhere' } }],
  });
  await transitions.complete(task, { runToken: 'run-c', result: 'done' });
  expect(await packed(task.id)).toEqual({ list: 1, toCompact: '0' });
  const all = await store.events(task.id);
  await compactEvents({ redis: store.redis, keys });
  expect(await store.events(task.id)).toEqual(all);
  expect(all.some((event) => (event.data as { text?: string }).text === 'from elsewhere')).toBe(true);
});

it('falls back when the write lands after the run last wrote (the end commit finds another seq)', async () => {
  const task = await runningTask('run-d');
  // Between the run's last commit and its end commit: the copy is whole when sent, not when applied.
  const end = transitions.complete(task, { runToken: 'run-d', result: 'done' });
  const late = store.commit({
    taskId: task.id,
    tenant: 'acme',
    events: [{ type: 'reasoning', data: { text: 'late' } }],
  });
  await Promise.all([end, late]);
  const all = await store.events(task.id);
  expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
  await compactEvents({ redis: store.redis, keys });
  expect(await store.events(task.id)).toEqual(all);
  expect(all.filter((event) => (event.data as { text?: string }).text === 'late')).toHaveLength(1);
});

it("packs a retried task's run too: the lines before it are appended as they are", async () => {
  const task = await runningTask('run-e');
  await transitions.complete(task, { runToken: 'run-e', result: 'done' });
  const first = await store.events(task.id);
  // Run again (as a retry does), on the packed events of its first run.
  await runAgain(task, 'run-f');
  await transitions.complete(task, { runToken: 'run-f', result: 'again' });
  expect(store.runEvents.size).toBe(0);
  expect(await packed(task.id)).toEqual({ list: 0, toCompact: null });
  const all = await expectFollowing(task.id, first);
  expect(all.slice(first.length).map((event) => event.type)).toEqual(['task.queued', 'reasoning', 'task.completed']);
});

it('puts the lines it took back when the list was not every event after the packed ones (compacted since)', async () => {
  const task = await runningTask('run-j');
  // Not packed at its end (the run's copy was let go): compacted later, past what its record says is packed.
  store.runEvents.drop('run-j');
  await transitions.complete(task, { runToken: 'run-j', result: 'done' });
  await compactEvents({ redis: store.redis, keys });
  const first = await store.events(task.id);
  await runAgain(task, 'run-k');
  const listed = await store.redis.lrange(keys.events(task.id), 0, -1);
  await transitions.complete(task, { runToken: 'run-k', result: 'again' });
  expect(store.runEvents.size).toBe(0);
  expect(await packed(task.id)).toEqual({ list: 1, toCompact: '0' });
  // The lines its end took from the list went back, in their order, before its own.
  expect((await store.redis.lrange(keys.events(task.id), 0, -1)).slice(0, listed.length)).toEqual(listed);
  await compactEvents({ redis: store.redis, keys });
  expect((await expectFollowing(task.id, first)).at(-1)!.type).toBe('task.completed');
});

it("never appends to a packed string an earlier version closed: the retried run's end leaves it for a compaction", async () => {
  const task = await runningTask('run-l');
  await transitions.complete(task, { runToken: 'run-l', result: 'done' });
  // As storage version 3 left it: a closed stream, and no `packed` field in the record.
  const text = (await store.events(task.id)).map((event) => JSON.stringify(event)).join('\n');
  await store.redis.set(keys.packedEvents(task.id), deflateRawSync(text));
  await store.redis.hdel(keys.task(task.id), 'packed');
  const first = await store.events(task.id);
  await runAgain(task, 'run-m');
  await transitions.complete(task, { runToken: 'run-m', result: 'again' });
  expect(await packed(task.id)).toEqual({ list: 1, toCompact: '0' });
  await compactEvents({ redis: store.redis, keys });
  expect((await expectFollowing(task.id, first)).at(-1)!.type).toBe('task.completed');
});

it("packs a first run whose first event is too long to copy into its record through the list's path", async () => {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual', concurrencyKey: 'k'.repeat(60) }], {
    tenant: 'acme',
  });
  const task = (await store.getRecord(created!.id))!;
  expect(await store.redis.hexists(keys.task(task.id), 'first')).toBe(0);
  await transitions.claim(task, { runToken: 'run-n' });
  await store.commit({
    taskId: task.id,
    tenant: 'acme',
    runToken: 'run-n',
    events: [{ type: 'reasoning', data: { text: 'x' } }],
  });
  const live = await store.storedEvents(task.id);
  await transitions.complete(task, { runToken: 'run-n', result: 'done' });
  expect(await packed(task.id)).toEqual({ list: 0, toCompact: null });
  // Its create's stored block first, then the run's lines.
  expect((await store.redis.getBuffer(keys.packedEvents(task.id)))![0]).toBe(0);
  const replay = await store.storedEvents(task.id);
  expect(replay.slice(0, live.length).map((stored) => stored.text)).toEqual(live.map((stored) => stored.text));
  expect(replay.map((stored) => stored.event.seq)).toEqual(replay.map((_, index) => index + 1));
  // A record that kept no copy gets no field for one.
  expect(await store.redis.hexists(keys.task(task.id), 'first')).toBe(0);
});

it('packs nothing for a run another process ended, nor for a run that goes back to the queue', async () => {
  const other = new TaskStore(store.redis, keys);
  const task = await runningTask('run-g', other);
  expect(other.runEvents.size).toBe(1);
  await transitions.complete(task, { runToken: 'run-g', result: 'done' });
  expect(await packed(task.id)).toEqual({ list: 1, toCompact: '0' });
  const requeued = await runningTask('run-h');
  await transitions.requeue(requeued, { runToken: 'run-h', why: { kind: 'handed_back' } });
  expect(store.runEvents.size).toBe(0);
  other.runEvents.drop('run-g');
});

it('packs nothing for a task that wrote more than 64 KB before its run: those lines would be stored as they are', async () => {
  const task = await runningTask('run-i', store, `big ${'y'.repeat(70 * 1024)}`);
  expect(store.runEvents.size).toBe(0);
  await transitions.complete(task, { runToken: 'run-i', result: 'done' });
  expect(await packed(task.id)).toEqual({ list: 1, toCompact: '0' });
  const all = await store.events(task.id);
  await compactEvents({ redis: store.redis, keys });
  expect(await store.events(task.id)).toEqual(all);
});

it("writes the lines before the run as deflate's stored blocks, which the run's deflated lines follow", async () => {
  const include = new URL('../../../packages/store/scripts/includes/stored-blocks.lua', import.meta.url);
  const script = `${readFileSync(include, 'utf8')}\nreturn storedBlocks(ARGV[1]) .. ARGV[2]`;
  const tail = "the run's lines, é 🙂";
  // One block holds at most 65,535 bytes: none, one, exactly one full, and several.
  for (const size of [0, 1, 65_535, 65_536, 200_000]) {
    const before = Buffer.alloc(size, 'a');
    for (let index = 0; index < size; index += 997) before[index] = 0x0a;
    const packedBytes = await store.redis.callBuffer('EVAL', script, 0, before, deflateOpen(tail));
    expect(inflatePacked(packedBytes as Buffer)).toBe(before.toString('latin1') + tail);
  }
});

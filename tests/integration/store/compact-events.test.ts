/** Compacting an ended task's events, against a real Redis: the replay stays complete and in order. */
import { describe, expect, it } from 'vitest';
import { compactEvents } from '@agentq/store';
import { storeOnPrefix } from '../../helpers/store-on-prefix.js';

const { keys, store, transitions } = storeOnPrefix('compact');

/** A task whose run's process did not hold its events (run-events.ts): it is compacted after its end. */
async function endedTask() {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await transitions.claim(task, { runToken: 'run' });
  for (let step = 1; step <= 3; step++)
    await store.commit({
      taskId: task.id,
      tenant: 'acme',
      runToken: 'run',
      events: [{ type: 'reasoning', step, data: { text: `thinking ${step} ${'x'.repeat(200)}` } }],
    });
  store.runEvents.drop('run');
  await transitions.complete(task, { runToken: 'run', result: 'done' });
  return task;
}

describe('compacting ended tasks', () => {
  it('replaces the list with one deflated string, and reads back the same events from any point', async () => {
    const task = await endedTask();
    const before = await store.events(task.id);
    expect(await store.redis.zscore(keys.cells[0]!.toCompact, task.id)).not.toBeNull();
    const listBytes = Number(await store.redis.memory('USAGE', keys.events(task.id)));

    expect(await compactEvents({ redis: store.redis, keys })).toBeGreaterThanOrEqual(1);
    expect(await store.redis.exists(keys.events(task.id))).toBe(0);
    expect(await store.redis.zscore(keys.cells[0]!.toCompact, task.id)).toBeNull();
    const packedBytes = Number(await store.redis.memory('USAGE', keys.packedEvents(task.id)));
    console.log(`events of a task of ${before.length} events: list ${listBytes} B, compacted ${packedBytes} B`);
    expect(packedBytes).toBeLessThan(listBytes / 2);

    expect(await store.events(task.id)).toEqual(before);
    expect(await store.events(task.id, 3)).toEqual(before.slice(3));
    // The stored text is passed through as it was.
    expect((await store.storedEvents(task.id)).map((stored) => stored.text)).toEqual(
      before.map((event) => JSON.stringify(event)),
    );
  });

  it('keeps the numbering when a compacted task gets events again (a retry), and compacts them in later', async () => {
    const task = await endedTask();
    await compactEvents({ redis: store.redis, keys });
    await store.commit({ taskId: task.id, tenant: 'acme', events: [{ type: 'reasoning', data: { text: 'after' } }] });
    const all = await store.events(task.id);
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    // A read from a point: in the compacted part, and in the list begun after it.
    expect(await store.events(task.id, all.length - 2)).toEqual(all.slice(-2));
    expect(await store.events(task.id, all.length - 1)).toEqual(all.slice(-1));
    expect(await store.events(task.id, all.length)).toEqual([]);
    // Not ended again, so not due; once it is, the new events join the compacted ones.
    await store.redis.zadd(keys.cells[0]!.toCompact, 0, task.id);
    await compactEvents({ redis: store.redis, keys });
    expect(await store.redis.exists(keys.events(task.id))).toBe(0);
    expect(await store.events(task.id)).toEqual(all);
  });

  it('loses no event written while compaction runs', async () => {
    const task = await endedTask();
    const ended = (await store.events(task.id)).length;
    const writes = Array.from({ length: 60 }, (_, index) =>
      store.commit({
        taskId: task.id,
        tenant: 'acme',
        events: [{ type: 'reasoning', data: { text: `late ${index}` } }],
      }),
    );
    const passes = Array.from({ length: 20 }, async () => {
      await store.redis.zadd(keys.cells[0]!.toCompact, 0, task.id);
      await compactEvents({ redis: store.redis, keys });
    });
    await Promise.all([...writes, ...passes]);
    const all = await store.events(task.id);
    expect(all.map((event) => event.seq)).toEqual(Array.from({ length: ended + 60 }, (_, index) => index + 1));
    expect(
      all.filter(
        (event) => event.type === 'reasoning' && String((event.data as { text: string }).text).startsWith('late'),
      ),
    ).toHaveLength(60);
  });
});

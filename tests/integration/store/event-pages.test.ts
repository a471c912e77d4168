/** A task's events read a page at a time, against a real Redis: the same events as one read, from any point. */
import { expect, it } from 'vitest';
import { compactEvents, EVENT_PAGE, type StoredEvent } from '@agentq/store';
import { storeOnPrefix } from '../../helpers/store-on-prefix.js';

const { keys, store, transitions } = storeOnPrefix('pages');

/** A task with `count` events after its own, ended or not. */
async function taskWith(count: number, ended: boolean) {
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await transitions.claim(task, { runToken: 'run' });
  for (let from = 0; from < count; from += 100) {
    const events = Array.from({ length: Math.min(100, count - from) }, (_, index) => ({
      type: 'reasoning' as const,
      step: 1,
      data: { text: `thought ${from + index}` },
    }));
    await store.commit({ taskId: task.id, tenant: 'acme', runToken: 'run', events });
  }
  if (ended) await transitions.complete(task, { runToken: 'run', result: 'done' });
  return task;
}

async function paged(taskId: string, after?: number): Promise<StoredEvent[][]> {
  const pages: StoredEvent[][] = [];
  for await (const page of store.eventPages(taskId, after)) pages.push(page.map(plain));
  return pages;
}

/** What a reader reads of an event: its text, and the event it holds. */
const plain = (stored: StoredEvent): StoredEvent => ({ event: stored.event, text: stored.text });

it("reads a running task's list a page at a time, the same events as one read", async () => {
  const task = await taskWith(EVENT_PAGE * 3 + 10, false);
  const whole = await store.storedEvents(task.id);
  const pages = await paged(task.id);
  expect(pages.length).toBeGreaterThanOrEqual(4);
  expect(pages.every((page) => page.length <= EVENT_PAGE)).toBe(true);
  expect(pages.flat()).toEqual(whole);
  expect((await paged(task.id, 300)).flat()).toEqual(whole.slice(300));
});

it("reads an ended task's compacted events by inflating them as a stream, then a retry's list after them", async () => {
  const task = await taskWith(EVENT_PAGE * 4, true);
  await compactEvents({ redis: store.redis, keys });
  expect(await store.redis.exists(keys.events(task.id))).toBe(0);
  await store.commit({ taskId: task.id, tenant: 'acme', events: [{ type: 'reasoning', data: { text: 'after' } }] });
  const whole = await store.storedEvents(task.id);
  const pages = await paged(task.id);
  expect(pages.length).toBeGreaterThan(1);
  expect(pages.flat()).toEqual(whole);
  expect(pages.flat().map((stored) => stored.event.seq)).toEqual(whole.map((_, index) => index + 1));
  expect((await paged(task.id, whole.length - 3)).flat()).toEqual(whole.slice(-3));
});

it('reads on whole when the task is compacted between two pages', async () => {
  const task = await taskWith(EVENT_PAGE * 3, true);
  const whole = await store.storedEvents(task.id);
  const read: StoredEvent[] = [];
  for await (const page of store.eventPages(task.id)) {
    read.push(...page.map(plain));
    // After the first page, the list moves into the packed string.
    if (read.length === EVENT_PAGE) await compactEvents({ redis: store.redis, keys });
  }
  expect(await store.redis.exists(keys.events(task.id))).toBe(0);
  expect(read).toEqual(whole);
});

it('reads on whole when a run ends while its task is read: its packed string is written again, longer', async () => {
  // A first run of a few events, held by its process: its end writes the packed string whole.
  const [created] = await transitions.submit([{ prompt: 'p', agent: 'casual' }], { tenant: 'acme' });
  const task = (await store.getRecord(created!.id))!;
  await transitions.claim(task, { runToken: 'whole' });
  const thoughts = Array.from({ length: 40 }, (_, index) => ({
    type: 'reasoning' as const,
    step: 1,
    data: { text: `thought ${index} ${'x'.repeat(index * 7)}` },
  }));
  await store.commit({ taskId: task.id, tenant: 'acme', runToken: 'whole', events: thoughts });
  // The reader has the packed string's length (only the create's event is in it); the end comes before its read.
  const read = store.redis.getrangeBuffer.bind(store.redis);
  let ended = false;
  store.redis.getrangeBuffer = (async (...args: Parameters<typeof read>) => {
    if (!ended) {
      ended = true;
      await transitions.complete(task, { runToken: 'whole', result: 'done' });
    }
    return read(...args);
  }) as typeof read;
  try {
    const pages = await paged(task.id);
    expect(ended).toBe(true);
    const whole = await store.storedEvents(task.id);
    expect(pages.flat()).toEqual(whole);
    expect(whole.at(-1)!.event.type).toBe('task.completed');
  } finally {
    store.redis.getrangeBuffer = read;
  }
});

/**
 * Only a followed task's commits publish (event-hub.ts, follow.lua): a batch's tasks nobody watches cost
 * no PUBLISH a commit. The order of one subscriber's messages proves an absence: a commit of the
 * unfollowed task sent before one of the followed task would have arrived first.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';
import { connectRedis, createKeys, EventHub, newTaskId, TaskStore } from '@agentq/store';

const prefix = freshPrefix('follow');
const keys = createKeys(prefix);
const store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
const hubConnection = new Redis(redisUrl());
const hub = new EventHub(hubConnection, keys, store.redis);
const listener = new Redis(redisUrl());
afterAll(async () => {
  store.redis.disconnect();
  hubConnection.disconnect();
  listener.disconnect();
  await deletePrefix(prefix);
});

async function newTask(): Promise<string> {
  const id = newTaskId(keys);
  await store.create([{ fields: { id, rootId: id, tenant: 'acme', agent: 'casual', prompt: 'p', status: 'queued' } }]);
  return id;
}

const note = (taskId: string, text: string) =>
  store.commit({ taskId, tenant: 'acme', events: [{ type: 'reasoning', data: { text } }] });

it("publishes a task's events once someone follows it, and never before", async () => {
  const [quiet, watched] = [await newTask(), await newTask()];
  const received: string[] = [];
  let arrived!: () => void;
  let wanted = 1;
  listener.on('message', (_channel: string, text: string) => {
    for (const line of text.split('\n')) received.push((JSON.parse(line) as { data: { text: string } }).data.text);
    if (received.length >= wanted) arrived();
  });
  await listener.subscribe(keys.eventsChannel(quiet), keys.eventsChannel(watched));
  const unfollow = await hub.follow(watched, () => undefined);

  let done = new Promise<void>((resolve) => (arrived = resolve));
  await note(quiet, 'nobody follows this');
  await note(watched, 'followed');
  await done;
  expect(received).toEqual(['followed']);
  // Stored all the same: a follower that comes later reads it.
  expect((await store.events(quiet)).map((event) => event.type)).toEqual(['reasoning']);

  // Followed from now on: its next commit publishes.
  wanted = 2;
  done = new Promise<void>((resolve) => (arrived = resolve));
  const unfollowQuiet = await hub.follow(quiet, () => undefined);
  await note(quiet, 'now followed');
  await done;
  expect(received).toEqual(['followed', 'now followed']);
  unfollow();
  unfollowQuiet();
});

it('leaves no record behind when it follows a task that is not there', async () => {
  const missing = newTaskId(keys);
  const unfollow = await hub.follow(missing, () => undefined);
  unfollow();
  expect(await store.redis.exists(keys.task(missing))).toBe(0);
});

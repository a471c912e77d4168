/**
 * B7: one task's events followed by many SSE clients at once (`GET /v1/tasks/:id/events`), from the
 * commit of an event to each client reading it, against as many plain Redis subscribers of another
 * task's events channel (the raw reference: Redis itself fanning out the same commit's PUBLISH, which
 * the API's hub is the one subscriber of on the SSE side). Both sides get the same event, as the
 * same JSON text, and parse it alike: the difference is what the API's hub and SSE add. The clients
 * are all in this process, for both: node:http read as text on one side, ioredis on the other (a
 * client built on the global fetch and web streams spends more on its own side than the whole
 * fan-out costs).
 */
import http from 'node:http';
import { createSseReader } from '@agentq/contract';
import { createKeys, TaskStore } from '@agentq/store';
import { Redis } from 'ioredis';
import { startAgentq } from '../lib/agentq.mjs';
import { alternate, percentile } from '../lib/stats.mjs';
import { tenantsEnv } from '../lib/config-file.mjs';

const now = () => performance.timeOrigin + performance.now();

export async function measureEventFanout({ redis, quick }) {
  const clients = quick ? 500 : 1_000;
  const events = quick ? 15 : 40;
  // All its clients are one tenant's (the open API's): allowed as many streams as it opens.
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: 'http://127.0.0.1:9/v1',
    prefix: 'b7',
    pools: null,
    env: {
      ...tenantsEnv({ '*': { limits: { sseStreams: clients } } }),
      AGENTQ_CONNECTIONS_PER_ADDRESS: '0',
    },
  });
  const connection = new Redis(redis.url);
  const store = new TaskStore(connection, createKeys('b7'));
  // Two tasks (queued, no worker runs them): the SSE clients follow one, the subscribers the other's channel.
  const [taskId, subscribedTaskId] = await agentq.submit([
    { prompt: 'followed by many', agent: 'web' },
    { prompt: 'subscribed to by many', agent: 'web' },
  ]);
  // Marked followed, as the API's hub marks a task its clients follow (only a followed task's commits publish).
  await connection.hset(createKeys('b7').task(subscribedTaskId), 'followed', '1');

  // Every client calls `deliver(sentAt)` as an event reaches it; a round waits for all of them.
  let round;
  const deliver = (sentAt) => {
    round.latencies.push(now() - sentAt);
    if (round.latencies.length === clients) round.done();
  };
  const expectRound = () => {
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    round = { latencies: [], done };
    return finished;
  };

  const requests = [];
  let opened = 0;
  let allOpen;
  const open = new Promise((resolve) => (allOpen = resolve));
  for (let index = 0; index < clients; index++) {
    const reader = createSseReader();
    const request = http.get(
      `${agentq.api.url}/v1/tasks/${taskId}/events`,
      { headers: { accept: 'text/event-stream' } },
      (response) => {
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          for (const message of reader.push(chunk)) {
            const event = JSON.parse(message.data);
            if (event.type === 'task.queued' && ++opened === clients) allOpen();
            if (event.type === 'reasoning') deliver(Number(event.data.text));
          }
        });
        response.on('error', () => undefined);
      },
    );
    request.on('error', () => undefined);
    requests.push(request);
  }
  const subscribers = Array.from({ length: clients }, () => new Redis(redis.url));
  await Promise.all(
    subscribers.map((subscriber) => subscriber.subscribe(createKeys('b7').eventsChannel(subscribedTaskId))),
  );
  // What each subscriber gets is the event as the API's hub gets it: its JSON line, read the same way.
  for (const subscriber of subscribers)
    subscriber.on('message', (_channel, text) => deliver(Number(JSON.parse(text).data.text)));
  await open;

  const variants = {
    agentq: async () => {
      const finished = expectRound();
      await store.commit({ taskId, tenant: 'default', events: [{ type: 'reasoning', data: { text: String(now()) } }] });
      await finished;
      return round.latencies;
    },
    raw: async () => {
      const finished = expectRound();
      await store.commit({
        taskId: subscribedTaskId,
        tenant: 'default',
        events: [{ type: 'reasoning', data: { text: String(now()) } }],
      });
      await finished;
      return round.latencies;
    },
  };
  try {
    // Warm-up, as in every row: the first event through the API's fan-out (its code not yet
    // optimised, the garbage of opening the streams still to collect) is not what a follower sees after.
    await alternate(variants, 2);
    const samples = await alternate(variants, events);
    return {
      clients,
      events,
      agentq: { p50: percentile(samples.agentq, 50), p99: percentile(samples.agentq, 99) },
      raw: { p50: percentile(samples.raw, 50), p99: percentile(samples.raw, 99) },
    };
  } finally {
    for (const request of requests) request.destroy();
    for (const subscriber of subscribers) subscriber.disconnect();
    connection.disconnect();
    await agentq.stop();
  }
}

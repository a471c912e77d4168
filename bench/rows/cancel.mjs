/**
 * B9: a cancel of a running task, from `POST /v1/tasks/:id/cancel` to its `task.cancelled` event on the
 * task's channel: the API flags the task and tells the workers, the worker holding it aborts its model
 * call (held ten minutes by the double) and records the end. Against what the cancel rides on: a
 * Redis PUBLISH to a subscriber. The tests check that a cancel stops a run; how fast is measured here.
 */
import { Redis } from 'ioredis';
import { createKeys } from '@agentq/store';
import { post, startAgentq } from '../lib/agentq.mjs';
import { startModel } from '../lib/model.mjs';
import { alternate, percentile } from '../lib/stats.mjs';

export async function measureCancel({ redis, quick }) {
  const samples = quick ? 20 : 60;
  const model = await startModel({ latencyMs: 600_000, script: 'single', announce: true });
  const agentq = await startAgentq({
    redisUrl: redis.url,
    modelURL: model.baseURL,
    prefix: 'b9',
    pools: 'casual',
    concurrency: 50,
  });
  const keys = createKeys(agentq.prefix);
  const subscriber = new Redis(redis.url);
  const publisher = new Redis(redis.url);
  let next = 0;
  const cancelOnce = async () => {
    const prompt = `cancel ${next++}`;
    const arrived = model.arrival(prompt);
    const [taskId] = await agentq.submit([{ prompt, agent: 'casual' }]);
    const channel = keys.eventsChannel(taskId);
    // Marked followed, as the API's hub marks a task its clients follow (only a followed task's commits publish).
    await publisher.hset(keys.task(taskId), 'followed', '1');
    const cancelled = new Promise((resolve) => {
      const onMessage = (from, text) => {
        if (from !== channel || !text.split('\n').some((line) => JSON.parse(line).type === 'task.cancelled')) return;
        subscriber.off('message', onMessage);
        resolve(performance.now());
      };
      subscriber.on('message', onMessage);
    });
    await subscriber.subscribe(channel);
    // Running: its model call is under way (and held).
    await arrived;
    const sentAt = performance.now();
    const { status } = await post(`${agentq.api.url}/v1/tasks/${taskId}/cancel`, '');
    if (status !== 202) throw new Error(`cancel: ${status}`);
    const lag = (await cancelled) - sentAt;
    await subscriber.unsubscribe(channel);
    return lag;
  };
  const publishOnce = async () => {
    const channel = `b9-raw:${next++}`;
    await subscriber.subscribe(channel);
    const received = new Promise((resolve) => {
      const onMessage = (from) => {
        if (from !== channel) return;
        subscriber.off('message', onMessage);
        resolve(performance.now());
      };
      subscriber.on('message', onMessage);
    });
    const sentAt = performance.now();
    await publisher.publish(channel, 'cancel');
    const lag = (await received) - sentAt;
    await subscriber.unsubscribe(channel);
    return lag;
  };
  try {
    for (let warm = 0; warm < 5; warm++) {
      await cancelOnce();
      await publishOnce();
    }
    const lags = await alternate({ agentq: cancelOnce, raw: publishOnce }, samples);
    return {
      samples,
      agentq: { p50: percentile(lags.agentq, 50), p99: percentile(lags.agentq, 99) },
      raw: { p50: percentile(lags.raw, 50), p99: percentile(lags.raw, 99) },
    };
  } finally {
    subscriber.disconnect();
    publisher.disconnect();
    await Promise.all([agentq.stop(), model.stop()]);
  }
}

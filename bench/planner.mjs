/**
 * The planner's DAG scheduling, with a zero-latency model: how soon a subtask is queued after the
 * last subtask it needs ends, and the end-to-end time of a planned diamond (plan, 1, then 2 and 3 in
 * parallel, then 4, then the final answer).
 *
 *   npm run bench:planner -- --tasks 100
 */
import { parseArgs } from 'node:util';
import { createKeys, STATUS_SPAN, statusBand } from '@agentq/store';
import { startAgentq, until } from './lib/agentq.mjs';
import { startModel } from './lib/model.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { percentile } from './lib/stats.mjs';

const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '100' }, concurrency: { type: 'string', default: '20' } },
});
const taskCount = Number(values.tasks);
const redis = await startPrivateRedis();
const model = await startModel({ script: 'diamond' });
const agentq = await startAgentq({
  redisUrl: redis.url,
  modelURL: model.baseURL,
  prefix: 'planner',
  pools: 'planner,casual',
  concurrency: Number(values.concurrency),
});
try {
  const started = performance.now();
  const ids = await agentq.submit(Array.from({ length: taskCount }, (_, index) => ({ prompt: `diamond ${index}` })));
  // The roots' statuses are in their scores in the list (task-index.ts): wait until each has ended.
  const ended = [statusBand('completed'), statusBand('failed')];
  const bands = async () =>
    (await redis.client.zmscore(createKeys('planner').cells[0].tenantTasks('default'), ...ids)).map((score) =>
      Math.floor(Number(score) / STATUS_SPAN),
    );
  await until(async () => (await bands()).filter((band) => ended.includes(band)).length, taskCount, 20);
  const totalMs = performance.now() - started;

  const gaps = [];
  const spans = [];
  for (const id of ids) {
    const events = await (
      await fetch(`${agentq.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json();
    const at = (predicate) => Date.parse(events.find(predicate)?.ts ?? '');
    const endOf = (planId) =>
      at((event) => event.taskId !== id && event.data.planId === planId && event.type.startsWith('task.'));
    const queuedOf = (planId) => at((event) => event.type === 'subtask.queued' && event.data.planId === planId);
    gaps.push(queuedOf('2') - endOf('1'), queuedOf('3') - endOf('1'), queuedOf('4') - Math.max(endOf('2'), endOf('3')));
    spans.push(
      at((event) => event.type === 'task.completed' && event.taskId === id) -
        at((event) => event.type === 'task.queued'),
    );
  }
  console.log(
    `agentq planner: ${taskCount} planned diamonds (4 subtasks each), zero-latency model, 1 worker process, concurrency ${values.concurrency} per pool`,
  );
  console.log(
    `  all done:                         ${(totalMs / 1000).toFixed(2)} s -> ${(taskCount / (totalMs / 1000)).toFixed(1)} planned tasks/s, ${((taskCount * 4) / (totalMs / 1000)).toFixed(0)} subtasks/s`,
  );
  console.log(
    `  need ended -> dependent queued:   p50 ${percentile(gaps, 50)} ms, p95 ${percentile(gaps, 95)} ms, max ${percentile(gaps, 100)} ms`,
  );
  console.log(`  one planned task, end to end:     p50 ${percentile(spans, 50)} ms, p95 ${percentile(spans, 95)} ms`);
} finally {
  await agentq.stop();
  await model.stop();
  await redis.stop();
}

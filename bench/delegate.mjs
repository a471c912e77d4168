/**
 * Parents waiting on children: `--tasks` leads each call `delegate` for one child; the children's
 * answers are held until every lead waits. Then: the worker slots the waiting leads hold (their pool's
 * active jobs), what a waiting lead keeps in Redis beyond its own steps (its record's `pending` and
 * `children` fields, and the memory of its record hash), and, once the children are let go, the time
 * from each child's end to its lead's next model call. A zero-latency model, one worker process.
 *
 *   npm run bench:delegate -- --tasks 1000
 */
import { parseArgs } from 'node:util';
import { countByStatus, createKeys } from '@agentq/store';
import { startAgentq, until } from './lib/agentq.mjs';
import { configFile } from './lib/config-file.mjs';
import { startModel } from './lib/model.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { percentile } from './lib/stats.mjs';

const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '1000' }, concurrency: { type: 'string', default: '50' } },
});
const taskCount = Number(values.tasks);
const prefix = 'delegate';
const redis = await startPrivateRedis();
const model = await startModel({ script: 'delegate', log: true });
const agentq = await startAgentq({
  redisUrl: redis.url,
  modelURL: model.baseURL,
  prefix,
  pools: 'lead,child',
  concurrency: Number(values.concurrency),
  env: {
    AGENTQ_CONFIG: configFile({
      agents: {
        lead: {
          description: 'leads',
          instructions: 'You lead.',
          tools: ['delegate'],
          delegate: { agents: ['child'] },
          stream: false,
        },
        child: { description: 'helps', instructions: 'You help.', stream: false },
      },
    }),
  },
});
const keys = createKeys(prefix);
const counts = () => countByStatus(redis.client, [keys.cells[0].tenantTasks('default')]);
try {
  const ids = await agentq.submit(
    Array.from({ length: taskCount }, (_, index) => ({ prompt: `lead ${index}`, agent: 'lead' })),
  );
  await until(async () => (await counts()).waiting, taskCount, 50);
  const pools = await (await fetch(`${agentq.api.url}/v1/pools`)).json();
  const lead = pools.pools.find((pool) => pool.name === 'lead');
  const child = pools.pools.find((pool) => pool.name === 'child');
  // What a waiting lead keeps for its wait: the fields its interrupt wrote, and its record hash whole.
  const fieldBytes = [];
  const hashBytes = [];
  for (const id of ids.slice(0, 200)) {
    const key = keys.task(id);
    const [pending, children] = await Promise.all([
      redis.client.hstrlen(key, 'pending'),
      redis.client.hstrlen(key, 'children'),
    ]);
    fieldBytes.push(pending + children);
    hashBytes.push(await redis.client.memory('USAGE', key));
  }

  model.release();
  await until(async () => (await counts()).completed, taskCount, 50);
  // From each child's end (its task.completed) to its lead's next model call (the model's log).
  const asked = new Map();
  for (const [at, prompt] of await model.log()) {
    if (!prompt.startsWith('lead')) continue;
    asked.set(prompt, [...(asked.get(prompt) ?? []), at]);
  }
  const gaps = [];
  const queuedGaps = [];
  for (const [index, id] of ids.entries()) {
    const leadEvents = await (
      await fetch(`${agentq.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json();
    const queued = Date.parse(
      leadEvents.find((event) => event.type === 'task.queued' && event.data.children)?.ts ?? '',
    );
    const events = await (
      await fetch(`${agentq.api.url}/v1/tasks/${id}.c1.1/events`, { headers: { accept: 'application/json' } })
    ).json();
    const ended = Date.parse(events.find((event) => event.type === 'task.completed')?.ts ?? '');
    const next = asked.get(`lead ${index}`)?.[1];
    if (Number.isFinite(ended) && next !== undefined) gaps.push(Math.round(next - ended));
    if (Number.isFinite(ended) && Number.isFinite(queued)) queuedGaps.push(queued - ended);
  }
  console.log(
    `agentq delegate: ${taskCount} leads, each waiting on 1 child held until all wait; zero-latency model, 1 worker process, concurrency ${values.concurrency} per pool`,
  );
  console.log(
    `  while ${taskCount} leads wait:      lead pool active ${lead.counts.active} (child pool active ${child.counts.active}, waiting ${child.counts.waiting})`,
  );
  console.log(
    `  a waiting lead's wait in Redis: pending + children fields p50 ${percentile(fieldBytes, 50)} B; its record hash (MEMORY USAGE) p50 ${percentile(hashBytes, 50)} B`,
  );
  console.log(
    `  child ended -> lead queued again: p50 ${percentile(queuedGaps, 50)} ms, p99 ${percentile(queuedGaps, 99)} ms`,
  );
  console.log(
    `  child ended -> lead's next model call (${gaps.length}): p50 ${percentile(gaps, 50)} ms, p99 ${percentile(gaps, 99)} ms, max ${percentile(gaps, 100)} ms`,
  );
} finally {
  await agentq.stop();
  await model.stop();
  await redis.stop();
}

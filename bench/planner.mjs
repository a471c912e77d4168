/**
 * The planner's DAG scheduling, with a zero-latency model: how soon a subtask is queued after the
 * last subtask it needs ends, and the end-to-end time of a planned diamond (plan, 1, then 2 and 3 in
 * parallel, then 4, then the final answer).
 *
 *   npm run bench:planner -- --tasks 100
 *
 * Spawns `agentq api` and one `agentq worker` (all pools) against REDIS_URL under a fresh key prefix.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startOpenAIDouble } from '@agentq/llm';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '100' }, concurrency: { type: 'string', default: '20' } } });
const taskCount = Number(values.tasks);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `agentq-bench-planner-${process.pid}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
const main = new URL('../apps/cli/dist/main.js', import.meta.url).pathname;
const plan = [
  { id: '1', agent: 'casual', task: 'one', need: [] },
  { id: '2', agent: 'casual', task: 'two', need: ['1'] },
  { id: '3', agent: 'casual', task: 'three', need: ['1'] },
  { id: '4', agent: 'casual', task: 'four', need: ['2', '3'] },
];
const double = await startOpenAIDouble({
  rules: [
    { match: (r) => String(r.messages[0]?.content).startsWith('You are the planner'), reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\`` } },
    { reply: { content: 'done' } },
  ],
});
const env = { ...process.env, PORT: '0', REDIS_URL: redisUrl, AGENTQ_REDIS_PREFIX: prefix, AGENTQ_DATA_DIR: dataDir, OPENAI_BASE_URL: double.baseURL, AGENTQ_MODEL: 'bench', AGENTQ_CONCURRENCY: values.concurrency };
const children = [];
const start = (args, ready) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = out.match(ready);
      if (match) resolve(match);
    });
  });
const [, url] = await start(['api'], /listening on (http\S+)/);
await start(['worker'], /serving/);

const redis = new Redis(redisUrl);
const started = performance.now();
const response = await fetch(`${url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tasks: Array.from({ length: taskCount }, (_, index) => ({ prompt: `diamond ${index}` })) }) });
const ids = (await response.json()).tasks.map((task) => task.id);
while ((await redis.zcard(`${prefix}:tasks:status:completed`)) + (await redis.zcard(`${prefix}:tasks:status:failed`)) < taskCount) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
const totalMs = performance.now() - started;

const gaps = [];
const spans = [];
for (const id of ids) {
  const events = await (await fetch(`${url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })).json();
  const at = (predicate) => Date.parse(events.find(predicate)?.ts ?? '');
  const endOf = (planId) => at((event) => event.taskId !== id && event.data.planId === planId && event.type.startsWith('task.'));
  const queuedOf = (planId) => at((event) => event.type === 'subtask.queued' && event.data.planId === planId);
  gaps.push(queuedOf('2') - endOf('1'), queuedOf('3') - endOf('1'), queuedOf('4') - Math.max(endOf('2'), endOf('3')));
  spans.push(at((event) => event.type === 'task.completed' && event.taskId === id) - at((event) => event.type === 'task.queued'));
}
const pct = (list, p) => list.sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor((p / 100) * list.length))];
console.log(`agentq planner: ${taskCount} planned diamonds (4 subtasks each), zero-latency model, 1 worker process, concurrency ${values.concurrency} per pool`);
console.log(`  all done:                         ${(totalMs / 1000).toFixed(2)} s -> ${(taskCount / (totalMs / 1000)).toFixed(1)} planned tasks/s, ${((taskCount * 4) / (totalMs / 1000)).toFixed(0)} subtasks/s`);
console.log(`  need ended -> dependent queued:   p50 ${pct(gaps, 50)} ms, p95 ${pct(gaps, 95)} ms, max ${pct(gaps, 100)} ms`);
console.log(`  one planned task, end to end:     p50 ${pct(spans, 50)} ms, p95 ${pct(spans, 95)} ms`);

for (const child of children) child.kill('SIGTERM');
await Promise.all(children.map((child) => new Promise((resolve) => child.once('exit', resolve))));
let cursor = '0';
do {
  const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
  cursor = next;
  if (keys.length) await redis.del(...keys);
} while (cursor !== '0');
redis.disconnect();
await double.close();
rmSync(dataDir, { recursive: true, force: true });

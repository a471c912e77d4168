/**
 * Throughput of the whole system with a zero-latency model: how many tasks per second agentq itself
 * can push through (API, Redis, BullMQ, worker loop, tools), and the latency a task sees.
 *
 *   npm run bench -- --tasks 1000 --workers 2 --concurrency 20
 *
 * Spawns `agentq api` and N `agentq worker` processes against REDIS_URL (default 127.0.0.1:6379) under a
 * fresh key prefix, with the OpenAI-wire double as the model, submits one batch, and prints figures.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startOpenAIDouble } from '@agentq/llm';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '20' },
    'tool-share': { type: 'string', default: '0.5' },
  },
});
const taskCount = Number(values.tasks);
const workerCount = Number(values.workers);
const toolShare = Number(values['tool-share']);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `agentq-bench-${process.pid}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
const main = new URL('../apps/cli/dist/main.js', import.meta.url).pathname;

// coder tasks: write a file, run bash, answer (3 model calls, 2 tools); casual: one model call.
const double = await startOpenAIDouble({
  rules: [
    { match: (r) => (r.tools ?? []).some((t) => t.function.name === 'write_file') && !r.messages.some((m) => m.role === 'tool'), reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] } },
    { match: (r) => r.messages.filter((m) => m.role === 'tool').length === 1, reply: { toolCalls: [{ name: 'bash', arguments: { command: 'cat a.txt' } }] } },
    { reply: { content: 'done' } },
  ],
});
const env = {
  ...process.env,
  PORT: '0',
  REDIS_URL: redisUrl,
  AGENTQ_REDIS_PREFIX: prefix,
  AGENTQ_DATA_DIR: dataDir,
  OPENAI_BASE_URL: double.baseURL,
  AGENTQ_MODEL: 'bench',
  AGENTQ_CONCURRENCY: values.concurrency,
};
const children = [];
function start(args, ready) {
  const child = spawn(process.execPath, [main, ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = out.match(ready);
      if (match) resolve(match);
    });
  });
}
const [, url] = await start(['api'], /listening on (http\S+)/);
await Promise.all(Array.from({ length: workerCount }, () => start(['worker'], /serving/)));

const redis = new Redis(redisUrl);
const tasks = Array.from({ length: taskCount }, (_, index) => ({ prompt: `bench ${index}`, agent: index < taskCount * toolShare ? 'coder' : 'casual' }));
const started = performance.now();
const response = await fetch(`${url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tasks }) });
if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
const submitMs = performance.now() - started;
for (;;) {
  const [done, failed] = await Promise.all([redis.zcard(`${prefix}:tasks:status:completed`), redis.zcard(`${prefix}:tasks:status:failed`)]);
  if (done + failed >= taskCount) {
    if (failed) console.log(`failed: ${failed}`);
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
}
const totalMs = performance.now() - started;

const ids = await redis.zrange(`${prefix}:tasks`, 0, -1);
const pipeline = redis.pipeline();
for (const id of ids) pipeline.hmget(`${prefix}:task:${id}`, 'createdAt', 'finishedAt', 'agent');
const latencies = { coder: [], casual: [] };
for (const [, [created, finished, agent]] of await pipeline.exec()) latencies[agent].push(Date.parse(finished) - Date.parse(created));
const pct = (list, p) => (list.length ? list.sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor((p / 100) * list.length))] : NaN);

console.log(`agentq throughput: ${taskCount} tasks (${Math.round(taskCount * toolShare)} coder with 3 model calls + 2 tools, rest casual with 1 call)`);
console.log(`  ${workerCount} worker process(es), concurrency ${values.concurrency} per pool, zero-latency model, ${double.requests.length} model calls`);
console.log(`  submit (one request):  ${submitMs.toFixed(0)} ms`);
console.log(`  all done:              ${(totalMs / 1000).toFixed(2)} s  ->  ${(taskCount / (totalMs / 1000)).toFixed(0)} tasks/s, ${(double.requests.length / (totalMs / 1000)).toFixed(0)} model calls/s`);
for (const agent of ['coder', 'casual']) {
  const list = latencies[agent];
  if (list.length) console.log(`  ${agent.padEnd(7)} latency p50 ${pct(list, 50)} ms, p95 ${pct(list, 95)} ms, max ${pct(list, 100)} ms (queued -> finished)`);
}

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

/**
 * Throughput of the whole system with a zero-latency model: how many tasks per second agentq itself
 * can push through (API, Redis, BullMQ, worker loop, tools), and the latency a task sees.
 *
 *   npm run bench -- --tasks 1000 --workers 2 --concurrency 20
 */
import { parseArgs } from 'node:util';
import { percentile, startAgentq } from './harness.mjs';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '20' },
    'tool-share': { type: 'string', default: '0.5' },
  },
});
const taskCount = Number(values.tasks);
const toolShare = Number(values['tool-share']);
const toolResults = (request) => request.messages.filter((message) => message.role === 'tool').length;

// coder tasks: write a file, run bash, answer (3 model calls, 2 tools); casual: one model call.
const agentq = await startAgentq({
  name: 'throughput',
  workers: Number(values.workers),
  concurrency: values.concurrency,
  rules: [
    { match: (r) => (r.tools ?? []).some((t) => t.function.name === 'write_file') && toolResults(r) === 0, reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] } },
    { match: (r) => toolResults(r) === 1, reply: { toolCalls: [{ name: 'bash', arguments: { command: 'cat a.txt' } }] } },
    { reply: { content: 'done' } },
  ],
});

const tasks = Array.from({ length: taskCount }, (_, index) => ({ prompt: `bench ${index}`, agent: index < taskCount * toolShare ? 'coder' : 'casual' }));
const started = performance.now();
const response = await fetch(`${agentq.url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tasks }) });
if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
const submitMs = performance.now() - started;
const { failed } = await agentq.waitForEnded(taskCount);
const totalMs = performance.now() - started;

const ids = await agentq.redis.zrange(`${agentq.prefix}:tasks`, 0, -1);
const pipeline = agentq.redis.pipeline();
for (const id of ids) pipeline.hmget(`${agentq.prefix}:task:${id}`, 'createdAt', 'finishedAt', 'agent');
const latencies = { coder: [], casual: [] };
for (const [, [created, finished, agent]] of await pipeline.exec()) latencies[agent].push(Date.parse(finished) - Date.parse(created));

console.log(`agentq throughput: ${taskCount} tasks (${Math.round(taskCount * toolShare)} coder with 3 model calls + 2 tools, rest casual with 1 call)${failed ? `, ${failed} FAILED` : ''}`);
console.log(`  ${values.workers} worker process(es), concurrency ${values.concurrency} per pool, zero-latency model, ${agentq.double.requests.length} model calls`);
console.log(`  submit (one request):  ${submitMs.toFixed(0)} ms`);
console.log(`  all done:              ${(totalMs / 1000).toFixed(2)} s  ->  ${(taskCount / (totalMs / 1000)).toFixed(0)} tasks/s, ${(agentq.double.requests.length / (totalMs / 1000)).toFixed(0)} model calls/s`);
for (const agent of ['coder', 'casual']) {
  const list = latencies[agent];
  if (list.length) console.log(`  ${agent.padEnd(7)} latency p50 ${percentile(list, 50)} ms, p95 ${percentile(list, 95)} ms, max ${percentile(list, 100)} ms (queued -> finished)`);
}
await agentq.stop();

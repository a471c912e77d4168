/**
 * Whether the API stays fair under one tenant's reads: another tenant's `GET /v1/me`, at rest and while
 * tenant acme reads an 80 MB event log six times at once (its task ended and compacted: 2,560 events of
 * 32 KiB, the most an event keeps of a text) and 2,000 slow connections hold half-sent headers. The
 * phases alternate; each prints the other tenant's p50/p99 and the API's memory (RSS) over its rest.
 * Issue 38's goal: p99 under 100 ms, and the API grown by less than 100 MB.
 *
 *   node bench/api-fairness.mjs [--quick] [--readers 6] [--slow 2000]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import { compactEvents, connectRedis, createKeys, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { startAgentq } from './lib/agentq.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { percentile } from './lib/stats.mjs';
import { tenantsEnv } from './lib/config-file.mjs';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    readers: { type: 'string', default: '6' },
    slow: { type: 'string', default: '2000' },
  },
});
const rounds = values.quick ? 1 : 2;
const phaseMs = values.quick ? 4_000 : 8_000;
const EVENTS = 2_560;

const redis = await startPrivateRedis();
const prefix = 'bench-fair';
const agentq = await startAgentq({
  redisUrl: redis.url,
  modelURL: 'http://127.0.0.1:9/v1',
  prefix,
  pools: null,
  env: tenantsEnv({ acme: { keys: ['key-acme'] }, beta: { keys: ['key-beta'] } }),
});
const { url } = agentq.api;
const apiPid = agentq.api.child.pid;

// acme's task, then its 80 MB of events, written as a worker's commits write them, ended and compacted.
const submitted = await fetch(`${url}/v1/tasks`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: 'Bearer key-acme' },
  body: JSON.stringify({ tasks: [{ prompt: 'big log', agent: 'casual' }] }),
});
const [{ id }] = (await submitted.json()).tasks;
const store = new TaskStore(connectRedis({ url: redis.url }), createKeys(prefix));
const transitions = new Transitions(store);
const record = await store.getRecord(id);
await transitions.claim(record, { runToken: 'bench' });
for (let from = 0; from < EVENTS; from += 64) {
  const events = Array.from({ length: 64 }, () => ({
    type: 'tool.result',
    step: 1,
    data: { id: 'c', name: 'bash', ok: true, output: randomBytes(24 * 1024).toString('base64'), durationMs: 1 },
  }));
  await store.commit({ taskId: id, tenant: record.tenant, runToken: 'bench', events });
}
await transitions.complete(record, { runToken: 'bench', result: 'done' });
await compactEvents({ redis: store.redis, keys: createKeys(prefix) });
const logBytes = Buffer.byteLength(JSON.stringify(await store.events(id)));

const beta = new http.Agent({ keepAlive: true, maxSockets: 1 });
const me = () =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    http
      .get(`${url}/v1/me`, { agent: beta, headers: { authorization: 'Bearer key-beta' } }, (response) => {
        response.resume();
        response.on('end', () => resolve(performance.now() - started));
      })
      .on('error', reject);
  });
const rss = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${apiPid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** beta's /v1/me every 20 ms for a phase, and the API's RSS at its most. */
async function measure(durationMs) {
  const latencies = [];
  let peak = rss();
  const until = Date.now() + durationMs;
  while (Date.now() < until) {
    latencies.push(await me());
    peak = Math.max(peak, rss());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { latencies, peak };
}

/** acme's six readers, each reading the whole log again as soon as it ends, and the slow connections. */
function load() {
  let stopped = false;
  let reads = 0;
  const reader = async () => {
    while (!stopped) {
      const response = await fetch(`${url}/v1/tasks/${id}/events`, {
        headers: { accept: 'application/json', authorization: 'Bearer key-acme' },
      });
      for await (const _chunk of response.body) if (stopped) break;
      reads++;
    }
  };
  const readers = Array.from({ length: Number(values.readers) }, reader);
  const port = Number(new URL(url).port);
  const slow = Array.from({ length: Number(values.slow) }, () => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    return socket;
  });
  return async () => {
    stopped = true;
    await Promise.allSettled(readers);
    for (const socket of slow) socket.destroy();
    return reads;
  };
}

console.log(
  `acme's log: ${EVENTS} events, ${(logBytes / 1024 / 1024).toFixed(1)} MB as JSON; phases of ${phaseMs / 1000} s, alternating`,
);
console.log(
  `${'phase'.padEnd(46)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'max'.padStart(8)} ${'RSS over rest'.padStart(14)}`,
);
for (let round = 0; round < rounds; round++) {
  const rest = await measure(phaseMs);
  const restRss = rest.peak;
  print('beta /v1/me, at rest', rest.latencies, 0);
  const stop = load();
  const busy = await measure(phaseMs);
  const reads = await stop();
  print(`beta /v1/me, under load (${reads} reads, ${values.slow} slow)`, busy.latencies, busy.peak - restRss);
}
store.redis.disconnect();
await agentq.stop();
process.exit(0);

function print(name, latencies, rssMb) {
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    `${name.padEnd(46)} ${`${percentile(sorted, 50).toFixed(1)} ms`.padStart(8)} ${`${percentile(sorted, 99).toFixed(1)} ms`.padStart(8)} ${`${sorted.at(-1).toFixed(1)} ms`.padStart(8)} ${`${rssMb.toFixed(0)} MB`.padStart(14)}`,
  );
}

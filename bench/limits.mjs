/**
 * Issue 13's figures, each through `agentq api` and two `agentq worker` processes on a private Redis:
 *
 * - Rate-limit accuracy: a shared token limit (the configuration file's `models.<model>.limits`) of N tokens per window, the model double
 *   reporting 150 tokens a call. The most tokens the double received in any window (goal: at most N
 *   plus one call), and the throughput over whole windows against N (goal: within 10%).
 * - Fairness wait: tenant acme has thousands of tasks queued (200 ms model); tenant beta then submits
 *   20. Beta's wait from its submit to each task's first model request (p50 / p99), and each tenant's
 *   share of the model calls while beta's tasks ran; beside it, the same with fair admission made moot
 *   (AGENTQ_FAIR_BACKLOG larger than the batch: plain BullMQ order).
 *
 *   npm run bench:limits [-- --quick]     (full: 60 s windows, about 5 minutes; quick: 10 s windows, about a minute)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { configFile, tenantsEnv } from './lib/config-file.mjs';
import { startModel } from './lib/model.mjs';
import { startPrivateRedis } from './lib/private-redis.mjs';
import { startAgentqApi, startAgentqWorker } from './lib/processes.mjs';
import { percentile } from './lib/stats.mjs';

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
const quick = values.quick;
const only = values.only?.split(',');
const CALL_TOKENS = 150;
const n = (value, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const redis = await startPrivateRedis();
const lines = [];
try {
  if (!only || only.includes('limits')) lines.push(...(await rateLimitAccuracy()));
  if (!only || only.includes('fairness')) lines.push(...(await fairnessWait()));
} finally {
  await redis.stop();
}
console.log(`\nagentq issue 13 benchmarks${quick ? ' (--quick)' : ''}, Node ${process.version}\n`);
console.log('| what | measured | goal | |');
console.log('|---|---|---|---|');
for (const line of lines)
  console.log(
    `| ${line.what} | ${line.measured} | ${line.goal} | ${line.pass === undefined ? '' : line.pass ? 'met' : '**missed**'} |`,
  );

/** agentq as a fleet: the API and two worker processes, on their own key prefix and data folder. */
async function startFleet({ prefix, modelURL, env, concurrency }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
  const common = {
    REDIS_URL: redis.url,
    AGENTQ_REDIS_PREFIX: prefix,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: modelURL,
    OPENAI_API_KEY: 'bench',
    AGENTQ_MODEL: 'bench',
    AGENTQ_LOG_LEVEL: 'warn',
    ...env,
  };
  const api = await startAgentqApi(common);
  const workers = await Promise.all([0, 1].map(() => startAgentqWorker(common, { pools: 'casual', concurrency })));
  return {
    api,
    async submit(tasks, key) {
      const response = await fetch(`${api.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ tasks }),
      });
      if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
      return (await response.json()).tasks.map((task) => task.id);
    },
    async stop() {
      await Promise.all([api.stop(), ...workers.map((worker) => worker.stop())]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function rateLimitAccuracy() {
  const windowMs = quick ? 10_000 : 60_000;
  const windows = 3;
  // 40 calls a window.
  const limit = 40 * CALL_TOKENS;
  const model = await startModel({ script: 'usage', log: true });
  const fleet = await startFleet({
    prefix: 'b13-limits',
    modelURL: model.baseURL,
    concurrency: 20,
    env: {
      AGENTQ_CONFIG: configFile({ models: { bench: { limits: { tokens: limit, perSeconds: windowMs / 1000 } } } }),
      AGENTQ_MAX_OUTPUT_TOKENS: '100',
    },
  });
  try {
    // More than the limit lets through in the measured windows: the limit, not the batch, sets the pace.
    await fleet.submit(
      Array.from({ length: Math.ceil(((windows + 1) * limit) / CALL_TOKENS) + 20 }, (_, index) => ({
        prompt: `limited ${index}`,
        agent: 'casual',
      })),
    );
    const first = async () => (await model.log())[0]?.[0];
    while (!(await first())) await sleep(50);
    const start = await first();
    await sleep(start + windows * windowMs - Date.now() + 500);
    const times = (await model.log()).map(([at]) => at).filter((at) => at < start + windows * windowMs);
    let most = 0;
    for (const from of times)
      most = Math.max(most, times.filter((at) => at >= from && at < from + windowMs).length * CALL_TOKENS);
    const perWindow = (times.length * CALL_TOKENS) / windows;
    const label = windowMs === 60_000 ? 'min' : `${windowMs / 1000} s`;
    return [
      {
        what: `rate limit: most tokens the model received in any ${label} window (limit ${n(limit)}/${label}, 2 worker processes)`,
        measured: `${n(most)} (${n(most / CALL_TOKENS)} calls)`,
        goal: `≤ ${n(limit + CALL_TOKENS)} (the limit + one call)`,
        pass: most <= limit + CALL_TOKENS,
      },
      {
        what: `rate limit: throughput over ${windows} whole windows`,
        measured: `${n(perWindow)} tokens/${label} (${n((100 * perWindow) / limit, 1)}% of the limit)`,
        goal: 'within 10% of the limit',
        pass: Math.abs(perWindow - limit) <= 0.1 * limit,
      },
    ];
  } finally {
    await fleet.stop();
    await model.stop();
  }
}

/** Beta's wait and the tenants' shares, with fair admission (`backlog`) as configured. */
async function fairnessRun({ prefix, backlog }) {
  const aTasks = quick ? 1_000 : 5_000;
  const model = await startModel({ latencyMs: 200, log: true });
  const fleet = await startFleet({
    prefix,
    modelURL: model.baseURL,
    concurrency: 25,
    env: {
      ...tenantsEnv({ acme: { keys: ['key-a'] }, beta: { keys: ['key-b'] } }),
      AGENTQ_FAIR_BACKLOG: String(backlog),
    },
  });
  try {
    await fleet.submit(
      Array.from({ length: aTasks }, (_, index) => ({ prompt: `acme ${index}`, agent: 'casual' })),
      'key-a',
    );
    // acme's batch is under way, its queue full, when beta comes.
    while ((await model.count()) < 100) await sleep(20);
    const submittedAt = Date.now();
    await fleet.submit(
      Array.from({ length: 20 }, (_, index) => ({ prompt: `beta ${index}`, agent: 'casual' })),
      'key-b',
    );
    let log = [];
    while ((log = await model.log()).filter(([, prompt]) => prompt.startsWith('beta')).length < 20) await sleep(50);
    const betaAt = log.filter(([, prompt]) => prompt.startsWith('beta')).map(([at]) => at);
    // While beta's tasks ran: from its first model call to its last (before, the queue's backlog of acme's ran).
    const during = log.filter(([at]) => at >= Math.min(...betaAt) && at <= Math.max(...betaAt));
    const betaShare = during.filter(([, prompt]) => prompt.startsWith('beta')).length / during.length;
    const waits = betaAt.map((at) => at - submittedAt);
    return { aTasks, p50: percentile(waits, 50), p99: percentile(waits, 99), betaShare };
  } finally {
    await fleet.stop();
    await model.stop();
  }
}

async function fairnessWait() {
  const fair = await fairnessRun({ prefix: 'b13-fair', backlog: 100 });
  const fifo = await fairnessRun({ prefix: 'b13-fifo', backlog: 1_000_000 });
  const share = (run) => `beta ${n(100 * run.betaShare)}% / acme ${n(100 - 100 * run.betaShare)}%`;
  return [
    {
      what: `fair tenants: beta's 20 tasks, submit -> first model request, p50 / p99 (acme has ${n(fair.aTasks)} queued; 200 ms model, 2 workers x 25)`,
      measured: `${n(fair.p50)} / ${n(fair.p99)} ms`,
      goal: 'within a few seconds',
      pass: fair.p99 <= 3_000,
    },
    {
      what: "fair tenants: each tenant's share of model calls while beta's tasks ran (its first call to its last)",
      measured: share(fair),
      goal: 'about half each',
      pass: fair.betaShare >= 0.35 && fair.betaShare <= 0.65,
    },
    {
      what: "the same without fair admission (AGENTQ_FAIR_BACKLOG=1000000: BullMQ's order)",
      measured: `${n(fifo.p50)} / ${n(fifo.p99)} ms (beta waits for acme's batch)`,
      goal: 'the reference',
      pass: undefined,
    },
  ];
}

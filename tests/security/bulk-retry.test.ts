/**
 * A tenant retrying, in one bulk action, many failed tasks that each hold a large result: the API read
 * each task whole (its result, plan, held calls...) to copy the few fields a retry needs, megabytes a
 * task into one process. A retry reads only what it copies. Measured as the bytes the real API process
 * reads from Redis during the bulk retry, through a counting proxy between them.
 */
import type { TaskView } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { tenantsEnv } from '../helpers/config-file.js';
import { startCountingProxy, type CountingProxy } from '../helpers/counting-proxy.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { apiCall } from '../helpers/api-call.js';

const MIB = 1024 * 1024;
const TASKS = 40;
const prefix = freshPrefix('bulk-retry');
const ACME = `acme-${randomBytes(8).toString('hex')}`;

let dataDir: string;
let proxy: CountingProxy;
let api: AgentqProcess | undefined;
let baseUrl: string;
let store: TaskStore;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-bulk-retry-'));
  const redis = new URL(redisUrl());
  proxy = await startCountingProxy({ host: redis.hostname, port: Number(redis.port) });
  redis.host = `${proxy.host}:${proxy.port}`;
  // No worker: the retries stay queued. The API reaches Redis through the proxy.
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: 'http://127.0.0.1:9/v1',
    model: 'none',
    extra: { ...tenantsEnv({ acme: { keys: [ACME] } }), REDIS_URL: redis.toString() },
  });
  api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  store = new TaskStore(connectRedis({ url: redisUrl() }), createKeys(prefix));
}, 60_000);

afterAll(async () => {
  await api?.stop('SIGKILL');
  store?.redis.disconnect();
  await proxy?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

const call = <T>(method: string, url: string, body?: unknown) => apiCall<T>(baseUrl, ACME, method, url, body);

/** The API process's peak resident memory so far (VmHWM), in MiB. */
const peakMib = () =>
  Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${api!.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

it('reads only what a retry copies, not the results of the tasks it retries', async () => {
  const submitted = await call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', {
    tasks: Array.from({ length: TASKS }, (_, index) => ({
      prompt: `task ${index}`,
      agent: 'casual',
      metadata: { index },
    })),
  });
  expect(submitted.status).toBe(202);
  const ids = submitted.body.tasks.map((task) => task.id);
  // Each ran and failed with 2 MiB of partial results, as a planned task that ran out of budget does.
  const transitions = new Transitions(store);
  for (const id of ids) {
    const ref = { id, tenant: 'acme', listed: true };
    await transitions.claim(ref, { runToken: 'run' });
    await transitions.fail(ref, {
      runToken: 'run',
      error: { code: 'budget', message: 'spent' },
      result: 'r'.repeat(2 * MIB),
    });
  }

  const bytesBefore = proxy.fromServer();
  const peakBefore = peakMib();
  const retried = await call<{ matched: number; changed: number }>('POST', '/v1/tasks/bulk', {
    action: 'retry',
    status: 'failed',
  });
  const read = proxy.fromServer() - bytesBefore;
  console.log(
    `bulk retry of ${TASKS} failed tasks with 2 MiB results: ${retried.status} ${JSON.stringify(retried.body)}; the API read ${(read / MIB).toFixed(2)} MiB from Redis; its peak RSS ${peakBefore.toFixed(0)} -> ${peakMib().toFixed(0)} MiB`,
  );
  expect(retried.status).toBe(202);
  expect(retried.body).toMatchObject({ matched: TASKS, changed: TASKS });
  // What a retry copies is a few hundred bytes a task here: far from one result.
  expect(read).toBeLessThan(2 * MIB);

  // The retries are the tasks again: their prompt, agent and metadata (with retryOf), and no result.
  const retries = (
    await call<{ tasks: Array<TaskView & { truncated: boolean }> }>('GET', '/v1/tasks?status=queued&limit=500')
  ).body.tasks;
  expect(retries).toHaveLength(TASKS);
  for (const retry of retries) {
    const of = retry.metadata.retryOf as string;
    expect(retry).toMatchObject({
      prompt: `task ${ids.indexOf(of)}`,
      agent: 'casual',
      result: null,
      metadata: { index: ids.indexOf(of) },
    });
  }
}, 120_000);

/**
 * agentq processes told to stop while Redis is away and the reader of their output is gone (the
 * `agentq start` that forked them killed, a `| tee` stopped with Ctrl-C): they stop, at once. Before,
 * a worker waited for Redis to answer its last requests for ever, and a process whose last lines could
 * not be written (EPIPE) never exited: pino flushes them synchronously at exit, and sonic-boom 4
 * retries a failed synchronous write for ever.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { freePort, startRedisServer } from '../setup/redis-server.js';
import { spawnAgentq, stopSpawned } from '../helpers/processes.js';

let dataDir: string | undefined;
let double: OpenAIDouble | undefined;
afterEach(async () => {
  await stopSpawned();
  await double?.close();
  double = undefined;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it.each([['api'], ['worker', '--pools', 'casual']])(
  'agentq %s stops on SIGTERM with Redis away and its stdout reader gone',
  async (...args) => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-reader-'));
    const { url, server: redis } = await startRedisServer();
    const agentq = spawnAgentq(args, {
      PORT: String(await freePort()),
      REDIS_URL: url,
      AGENTQ_DATA_DIR: dataDir,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      AGENTQ_MODEL: 'm',
    });
    await agentq.waitFor(args[0] === 'api' ? /listening on/ : /serving casual/);
    redis.kill('SIGKILL');
    await agentq.waitFor(/Redis connection lost/);
    // The reader's end of its stdout closes: every line it writes from now on fails (EPIPE). A worker's
    // grace for running tasks (10 s by default) is not waited: nothing could be written after it.
    agentq.child.stdout!.destroy();
    agentq.child.kill('SIGTERM');
    const exited = await Promise.race([
      agentq.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 5_000)),
    ]);
    expect(exited).toBe(0);
  },
  30_000,
);

it('a worker with a task running stops at once when Redis is away, and says the task was not handed back', async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-away-'));
  // The task's model call does not answer before the worker is told to stop.
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'late', delayMs: 60_000 } }] });
  const { url: redisUrl, server: redis } = await startRedisServer();
  const env = {
    PORT: String(await freePort()),
    REDIS_URL: redisUrl,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: 'm',
  };
  const api = spawnAgentq(['api'], env);
  const worker = spawnAgentq(['worker', '--pools', 'casual'], env);
  const url = (await api.waitFor(/listening on (http:\/\/[\d.:]+)/))[1]!;
  await worker.waitFor(/serving casual/);
  const response = await fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'slow', agent: 'casual' }] }),
  });
  expect(response.status).toBe(202);
  await expect.poll(() => double!.requests.length, { timeout: 10_000 }).toBe(1);
  redis.kill('SIGKILL');
  await worker.waitFor(/Redis connection lost/);
  worker.child.kill('SIGTERM');
  const exited = await Promise.race([
    worker.exited,
    new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 5_000)),
  ]);
  expect(exited).toBe(0);
  expect(worker.output()).toMatch(
    /"running":1,.*the running tasks are not handed back; each runs again once Redis is back/,
  );
}, 30_000);

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
import { freePort, spawnRedisServer, waitForRedis } from '../setup/redis-server.js';
import { spawnAgentq, stopSpawned } from '../helpers/processes.js';

let dataDir: string | undefined;
afterEach(async () => {
  await stopSpawned();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it.each([['api'], ['worker', '--pools', 'casual']])('agentq %s stops on SIGTERM with Redis away and its stdout reader gone', async (...args) => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-reader-'));
  const port = await freePort();
  const redis = spawnRedisServer(port);
  await waitForRedis(`redis://127.0.0.1:${port}`);
  const agentq = spawnAgentq(args, { PORT: String(await freePort()), REDIS_URL: `redis://127.0.0.1:${port}`, AGENTQ_DATA_DIR: dataDir, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', AGENTQ_MODEL: 'm' });
  await agentq.waitFor(args[0] === 'api' ? /listening on/ : /serving casual/);
  redis.kill('SIGKILL');
  await agentq.waitFor(/Redis connection lost/);
  // The reader's end of its stdout closes: every line it writes from now on fails (EPIPE). A worker's
  // grace for running tasks (10 s by default) is not waited: nothing could be written after it.
  agentq.child.stdout!.destroy();
  agentq.child.kill('SIGTERM');
  const exited = await Promise.race([agentq.exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 5_000))]);
  expect(exited).toBe(0);
}, 30_000);

/**
 * `agentq start` stopped (Ctrl-C) while its workers are in the middle of tasks: the workers hand their
 * tasks back to the queue first, then the API and the private Redis stop; one line says so, and no
 * error or stack trace is printed. And the demo keeps its data apart from real runs.
 */
import type { TaskEvent } from '@agentq/contract';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { freePort, waitForRedis } from '../setup/redis-server.js';
import { logLines, spawnAgentq, stopSpawned } from '../helpers/processes.js';

let double: OpenAIDouble | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await stopSpawned();
  await double?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

it('hands running tasks back before Redis stops, with one line and no stack trace', async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 60' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-shutdown-'));
  const redisPort = await freePort();
  const agentq = spawnAgentq(['start'], {
    PORT: String(await freePort()),
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: 'shutdown-model',
    AGENTQ_SHUTDOWN_GRACE_MS: '300',
  });
  const baseUrl = (await agentq.waitFor(/ready: API at (http[^\s"]+)/))[1]!;
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      tasks: Array.from({ length: 4 }, (_, index) => ({ prompt: `busy ${index}`, agent: 'coder' })),
    }),
  });
  const ids = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
  const events = async (id: string) =>
    (await (
      await fetch(`${baseUrl}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json()) as TaskEvent[];
  for (const id of ids)
    await expect
      .poll(async () => (await events(id)).some((event) => event.type === 'tool.call'), { timeout: 15_000 })
      .toBe(true);

  const before = agentq.output().length;
  agentq.child.kill('SIGINT');
  expect(await agentq.exited).toBe(130);
  const shutdown = agentq.output().slice(before);
  const own = logLines(shutdown)
    .filter((line) => line.name === 'agentq')
    .map((line) => line.msg);
  expect(own).toEqual([
    'stopping: the workers hand their running tasks back to the queue, then the API and Redis stop',
    'stopped',
  ]);
  expect(logLines(shutdown).filter((line) => line.level === 'error')).toEqual([]);
  expect(shutdown).not.toMatch(/^\s+at /m);
  expect(shutdown).not.toMatch(/Error|ECONNREFUSED|Missing lock|Connection is closed/);

  // Its Redis, started again from its files: every task was handed back (queued), none left running.
  const redis = spawn('redis-server', [path.join(dataDir, 'redis', 'redis.conf')], { stdio: 'ignore', detached: true });
  try {
    const password = (await readFile(path.join(dataDir, 'redis', 'password'), 'utf8')).trim();
    const url = `redis://:${password}@127.0.0.1:${redisPort}`;
    await waitForRedis(url);
    const client = new Redis(url);
    const statuses = await Promise.all(ids.map((id) => client.hget(`agentq:task:${id}`, 'status')));
    client.disconnect();
    expect(statuses).toEqual(ids.map(() => 'queued'));
  } finally {
    redis.kill('SIGKILL');
  }
}, 60_000);

it('the demo keeps its data apart: its own data directory, Redis and key prefix', async () => {
  // A data directory agentq makes itself, in a folder others may search, as a checkout's `.agentq` is.
  const parent = (dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-demo-')));
  await chmod(parent, 0o755);
  const ownDir = path.join(parent, '.agentq');
  const demo = spawnAgentq(['demo'], {
    PORT: String(await freePort()),
    AGENTQ_DATA_DIR: ownDir,
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
  });
  await demo.waitFor(/ready: API at (http[^\s"]+)/);
  expect(demo.output()).toMatch(/started a private redis-server .* data in .*\/demo\/redis/);
  expect(existsSync(path.join(ownDir, 'demo', 'redis', 'password'))).toBe(true);
  expect(existsSync(path.join(ownDir, 'redis'))).toBe(false);
  // Redis's folder is private; the folders above it stay searchable, or a root worker's jails could not
  // reach their work directories and every pool would refuse its process tools.
  expect((await stat(path.join(ownDir, 'demo', 'redis'))).mode & 0o777).toBe(0o700);
  expect((await stat(ownDir)).mode & 0o001).toBe(0o001);
  expect(demo.output()).not.toMatch(/cannot be reached by other users/);
  demo.child.kill('SIGINT');
  expect(await demo.exited).toBe(130);
});

it('stops everything, its Redis included, though the reader of its output went away (a `| tee` stopped by the same Ctrl-C)', async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-reader-'));
  const redisPort = await freePort();
  const demo = spawnAgentq(['demo'], {
    PORT: String(await freePort()),
    AGENTQ_DATA_DIR: dataDir,
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
  });
  await demo.waitFor(/ready: API at/);
  // Its output's reader goes away: every line it writes or forwards from now on fails (EPIPE).
  demo.child.stdout!.destroy();
  demo.child.kill('SIGINT');
  expect(await demo.exited).toBe(130);
  // Nothing printed a stack trace (an EPIPE not handled ended it half-way, its Redis left running).
  expect(demo.output()).not.toMatch(/^\s+at /m);
  // Its private Redis stopped: nothing listens on its port any more.
  const refused = await new Promise<string | undefined>((resolve) => {
    const socket = connect(redisPort, '127.0.0.1', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code));
  });
  expect(refused).toBe('ECONNREFUSED');
}, 60_000);

it('starts a worker that exited again, with a warning, and the rest runs on', async () => {
  double = await startOpenAIDouble({ rules: [{ reply: { content: 'still served' } }] });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-restart-'));
  const agentq = spawnAgentq(['start'], {
    PORT: String(await freePort()),
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: 'restart-model',
  });
  const baseUrl = (await agentq.waitFor(/ready: API at (http[^\s"]+)/))[1]!;
  // The casual pool's worker process (of this agentq: other tests run theirs) dies.
  const casualWorkers = () => childrenOf(agentq.child.pid!).filter((line) => line.includes('worker --pools casual'));
  const [casual] = casualWorkers();
  process.kill(Number(casual!.trim().split(' ')[0]), 'SIGKILL');
  await agentq.waitFor(/`agentq worker --pools casual` exited \(SIGKILL\); starting it again in 1 s\./);
  await expect.poll(() => casualWorkers().length, { timeout: 15_000 }).toBe(1);
  expect(casualWorkers()[0]).not.toBe(casual);
  expect(logLines(agentq.output()).find((line) => /exited \(SIGKILL\)/.test(String(line.msg)))).toMatchObject({
    level: 'warn',
  });
  // Everything else ran on, and the new worker serves its pool.
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'after', agent: 'casual' }] }),
  });
  const [task] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks;
  await expect
    .poll(async () => ((await (await fetch(`${baseUrl}/v1/tasks/${task!.id}`)).json()) as { status: string }).status, {
      timeout: 20_000,
    })
    .toBe('completed');
  expect(agentq.child.exitCode).toBeNull();
  agentq.child.kill('SIGINT');
  expect(await agentq.exited).toBe(130);
}, 60_000);

/** The processes a process started, a line each: its pid and command line. */
function childrenOf(pid: number): string[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n');
  } catch {
    return []; // ps exits 1 when there are none
  }
}

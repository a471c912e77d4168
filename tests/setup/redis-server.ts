/**
 * Gives the test run a Redis of its own: a `redis-server` on a free port when the binary is there
 * (nothing persisted, gone after the run), else the one at REDIS_URL. Tests read it with
 * `inject('redisUrl')` and still use a fresh key prefix each.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { TestProject } from 'vitest/node';
import { Redis } from 'ioredis';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** One server per tier (project) that asks for it, stopped by the teardown it returns. */
export async function setup(project: TestProject): Promise<() => void> {
  const port = await freePort();
  const child = spawnRedisServer(port);
  const started = await new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.once('spawn', () => resolve(true));
  });
  if (started) {
    const url = `redis://127.0.0.1:${port}`;
    await waitForRedis(url);
    project.provide('redisUrl', url);
    return () => child.kill('SIGKILL');
  }
  project.provide('redisUrl', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  return () => undefined;
}

/** A redis-server of a test's own on a free port, answering: its URL and process (to kill at the end). */
export async function startRedisServer(): Promise<{ url: string; server: ChildProcess }> {
  const port = await freePort();
  const server = spawnRedisServer(port);
  const url = `redis://127.0.0.1:${port}`;
  await waitForRedis(url);
  return { url, server };
}

/** A redis-server on `port` that keeps nothing on disk. */
export function spawnRedisServer(port: number): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function waitForRedis(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 25));
    } finally {
      client.disconnect();
    }
  }
  throw new Error(`The test redis-server at ${url} did not answer`);
}

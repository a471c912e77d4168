/**
 * A Redis of agentq's own for `agentq start` when none answers at REDIS_URL: `redis-server` from the
 * PATH, its files under the data directory, append-only file on so tasks survive a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { redisAnswers } from './redis-probe.js';

export async function startPrivateRedis(options: { url: string; dataDir: string }): Promise<ChildProcess> {
  const { hostname, port } = new URL(options.url);
  const dir = path.resolve(options.dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    'redis-server',
    ['--port', port || '6379', '--bind', hostname || '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--logfile', 'redis.log'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`Could not run redis-server: ${error.message}`)));
    child.once('exit', (code) => reject(new Error(`redis-server exited with code ${code}; see ${path.join(dir, 'redis.log')}`)));
  });
  const deadline = Date.now() + 10_000;
  const ready = (async () => {
    while (Date.now() < deadline) {
      if (await redisAnswers(options.url, 200)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not answer within 10 s');
  })();
  await Promise.race([ready, exited]);
  return child;
}

/** Whether an executable of that name is on the PATH. */
export function onPath(binary: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((folder) => {
    if (!folder) return false;
    try {
      accessSync(path.join(folder, binary), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

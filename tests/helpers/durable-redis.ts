/**
 * A redis-server of a test's own that keeps every write on disk (append-only, fsync always), so the
 * test can SIGKILL it and start it again on the same port with nothing lost: a Redis outage or restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { waitForRedis } from '../setup/redis-server.js';

export async function startDurableRedis(options: { port: number; dir: string }): Promise<ChildProcess> {
  const server = spawn(
    'redis-server',
    [
      '--port',
      String(options.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      options.dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  await waitForRedis(`redis://127.0.0.1:${options.port}`);
  return server;
}

export async function killRedis(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
}

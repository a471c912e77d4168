/**
 * A redis-server of the benchmark's own on a free port, so that its command counts and CPU are the
 * benchmark's alone (the machine's Redis serves others). Nothing is saved.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { Redis } from 'ioredis';

export async function startPrivateRedis() {
  const port = await freePort();
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  // Stopped with the benchmark however it ends: one stopped by a signal (Ctrl-C, a CI's timeout) must
  // not leave its server running (the other processes it started exit when their IPC channel closes).
  const killServer = () => server.kill('SIGKILL');
  process.once('exit', killServer);
  exitOnSignals();
  const url = `redis://127.0.0.1:${port}`;
  const client = await connectWhenUp(url, { everyMs: 20, tries: 250 });
  return {
    url,
    client,
    /** Every command Redis ran (those inside scripts included) and its CPU, since start or the last reset. */
    async usage() {
      const [commands, cpu] = await Promise.all([client.info('commandstats'), client.info('cpu')]);
      let calls = 0;
      const byCommand = {};
      const usecByCommand = {};
      for (const match of commands.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
        byCommand[match[1]] = Number(match[2]);
        usecByCommand[match[1]] = Number(match[3]);
        calls += Number(match[2]);
      }
      const seconds = (name) => Number(cpu.match(new RegExp(`^${name}:([\\d.]+)`, 'm'))?.[1] ?? 0);
      return { calls, byCommand, usecByCommand, cpuMs: (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1000 };
    },
    async resetStats() {
      await client.config('RESETSTAT');
    },
    async flush() {
      await client.flushall();
    },
    async stop() {
      process.off('exit', killServer);
      client.disconnect();
      server.kill('SIGKILL');
      await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.once('exit', resolve)));
    },
  };
}

/** Makes SIGINT and SIGTERM end this process through `exit` (code 128 + the signal), where the servers it started are stopped. */
export function exitOnSignals() {
  for (const signal of ['SIGINT', 'SIGTERM'])
    if (process.listenerCount(signal) === 0) process.once(signal, () => process.exit(128 + constants.signals[signal]));
}

/** A client of the server at `url` once it answers a PING, tried every `everyMs`, `tries` times at most. */
export async function connectWhenUp(url, { everyMs, tries }) {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => everyMs });
  client.on('error', () => undefined);
  for (let tried = 0; ; tried++) {
    try {
      await client.connect();
      await client.ping();
      return client;
    } catch (error) {
      if (tried >= tries) throw error;
      client.disconnect();
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

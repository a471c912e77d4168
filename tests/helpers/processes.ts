/** Runs agentq's real entry point as child processes, and waits on what they print. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../setup/redis-server.js';
import { redisUrl } from './redis.js';

export const AGENTQ_MAIN = fileURLToPath(new URL('../../apps/cli/dist/main.js', import.meta.url));

/** A log line as the processes write it (pino JSON). */
export type LogLine = Record<string, unknown> & { level: string; time: string; name: string; msg: string };

/** The JSON log lines of some output (the lines that are not JSON, such as a usage error, left out). */
export function logLines(output: string): LogLine[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as LogLine];
    } catch {
      return [];
    }
  });
}

export interface AgentqProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves when a line matching `pattern` has been printed (stdout or stderr). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once the process ended. */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The environment of spawned agentq processes: a free API port, the tests' Redis under `prefix`, a data
 * folder, and the wire double as the model; `extra` adds to it or overrides.
 */
export async function processEnv(options: {
  prefix: string;
  dataDir: string;
  modelURL: string;
  model: string;
  extra?: Record<string, string>;
}): Promise<Record<string, string>> {
  return {
    PORT: String(await freePort()),
    REDIS_URL: redisUrl(),
    AGENTQ_REDIS_PREFIX: options.prefix,
    AGENTQ_DATA_DIR: options.dataDir,
    OPENAI_BASE_URL: options.modelURL,
    AGENTQ_MODEL: options.model,
    ...options.extra,
  };
}

/** Every process spawned and not yet ended, for `stopSpawned`. */
const spawned = new Set<AgentqProcess>();

/** Stops whatever a test left running (after a failure, say): SIGTERM, so `start` stops its children, then SIGKILL. */
export async function stopSpawned(): Promise<void> {
  await Promise.all(
    [...spawned].map(async (process) => {
      const killer = setTimeout(() => process.child.kill('SIGKILL'), 5_000);
      await process.stop('SIGTERM');
      clearTimeout(killer);
    }),
  );
}

export function spawnAgentq(
  args: string[],
  env: Record<string, string>,
  options: {
    input?: string;
    /** Its working directory (an install's folder: its ./.env and agentq.config.yaml). Default: this one. */
    cwd?: string;
    /** Run it as this user (the tests run as root): a non-root install. */
    user?: { uid: number; gid: number };
    /** The entry point: another install's `agentq` (one from the packed tarballs). Default: this checkout's. */
    main?: string;
  } = {},
): AgentqProcess {
  const child = spawn(process.execPath, [options.main ?? AGENTQ_MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.user ?? {}),
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const check of waiters) check();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: AgentqProcess = {
    child,
    output: () => output,
    exited,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`agentq ${args.join(' ')} did not print ${pattern} within ${timeoutMs} ms. Output:\n${output}`),
          );
        }, timeoutMs);
        const check = () => {
          const match = output.match(pattern);
          if (match) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(match);
          }
        };
        waiters.add(check);
        void exited.then(() => {
          if (waiters.has(check)) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`agentq ${args.join(' ')} exited before printing ${pattern}. Output:\n${output}`));
          }
        });
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  spawned.add(handle);
  void exited.then(() => spawned.delete(handle));
  return handle;
}

/** Whether a process still runs (a zombie waiting to be reaped counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Host processes whose command line contains `marker` (pgrep itself left out), as `pid command` lines. */
export function processesMatching(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', marker], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter((line) => !line.includes('pgrep'));
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

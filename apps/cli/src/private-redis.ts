/**
 * A Redis of agentq's own for `agentq start` when none answers at a loopback REDIS_URL: `redis-server`
 * from the PATH, bound to loopback only, with a password generated once and kept in the data directory
 * (mode 0600), its files there too, append-only file on so tasks survive a restart. Code a task runs
 * cannot reach it from the jail, and without the password nothing else on this machine can use it.
 */
import { UsageError } from './usage-error.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { redisAnswers, wantsPassword } from './redis-probe.js';

export interface PrivateRedis {
  child: ChildProcess;
  /** REDIS_URL with the password, for agentq's own processes. */
  url: string;
  passwordFile: string;
}

export async function startPrivateRedis(options: { url: string; dataDir: string }): Promise<PrivateRedis> {
  const dir = path.resolve(options.dataDir, 'redis');
  // The data directory is made as the workers make it (a root worker's jails must be able to search
  // it, to reach their work directories); only Redis's own folder is private. A recursive mkdir with
  // mode 0700 made every missing parent 0700 too: `agentq demo` then refused its process tools.
  mkdirSync(path.dirname(dir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const passwordFile = path.join(dir, 'password');
  const password = privatePassword(dir);
  const url = withPassword(options.url, password);
  const port = new URL(options.url).port || '6379';
  // The password goes in a config file only agentq's user can read, never on a command line (`ps` shows those).
  const conf = path.join(dir, 'redis.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1 -::1',
      'protected-mode yes',
      `requirepass ${password}`,
      `dir ${dir}`,
      'appendonly yes',
      'save ""',
      'logfile redis.log',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  chmodSync(conf, 0o600);
  // Its own process group: a Ctrl-C in the terminal must not stop it before the workers have handed back.
  const child = spawn('redis-server', [conf], { stdio: 'ignore', detached: true });
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`Could not run redis-server: ${error.message}`)));
    child.once('exit', (code) =>
      reject(new Error(`redis-server exited with code ${code}; see ${path.join(dir, 'redis.log')}`)),
    );
  });
  const deadline = Date.now() + 10_000;
  const ready = (async () => {
    while (Date.now() < deadline) {
      if (await redisAnswers(url, 200)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not answer within 10 s');
  })();
  await Promise.race([ready, exited]);
  return { child, url, passwordFile };
}

/** The private Redis's password: generated the first time, then read from `<dir>/password`. */
export function privatePassword(dir: string): string {
  const file = path.join(dir, 'password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(24).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * REDIS_URL with the private Redis's password of `agentq start` (kept in `<data>/redis/password`), when
 * REDIS_URL gives none and that file exists; undefined otherwise. Nothing is generated.
 */
export function withStoredPassword(url: string, dataDir: string): string | undefined {
  const file = path.join(path.resolve(dataDir, 'redis'), 'password');
  if (new URL(url).password || !existsSync(file)) return undefined;
  return withPassword(url, readFileSync(file, 'utf8').trim());
}

/** The one line that says how to give a Redis that wants a password its password. */
export function passwordHelp(url: string, dataDir: string): string {
  return `The Redis at REDIS_URL=${redactedUrl(url)} wants a password (NOAUTH): ${passwordFix(dataDir)}`;
}

/** How to give it: in REDIS_URL, and where `agentq start`'s private Redis keeps its own. */
export function passwordFix(dataDir: string): string {
  const file = path.join(path.resolve(dataDir, 'redis'), 'password');
  return `put it in REDIS_URL, e.g. redis://:<password>@host:port (or redis://<user>:<password>@host:port for an ACL user)${existsSync(file) ? `; the private Redis of \`agentq start\` keeps its password in ${file}` : ''}.`;
}

/** A Redis URL fit to print: its password replaced. */
export function redactedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString().replace(/\/$/, '');
}

/** Runs a process's start; a Redis that wants a password it was not given is one line that says how to give it. */
export async function withRedisCredentials(
  config: { REDIS_URL: string; AGENTQ_DATA_DIR: string },
  start: () => Promise<void>,
): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (wantsPassword(error)) throw new UsageError(passwordHelp(config.REDIS_URL, config.AGENTQ_DATA_DIR));
    throw error;
  }
}

/** A Redis URL with this password (and the user it named, if any). */
export function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString().replace(/\/$/, '');
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

/**
 * Runs one tool process in its own process group, so a timeout or a cancel kills the whole tree
 * (a shell and everything it started), not just the shell. Output (stdout and stderr interleaved)
 * is capped while it streams.
 *
 * Node's own `spawn`, not execa: everything execa would add (its timeouts, kills, buffering) is done
 * here the way a tool needs it, and its piping cost a tool call about 1 ms and 1.5 ms of the worker's
 * CPU more (`bash -c true`: 3.2 ms against 2.3 ms, measured alternating; bench/jail.mjs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { OutputCollector } from './cap-output.js';
import { watchDisk, type DiskCheck, type DiskQuota } from './disk-quota.js';
import type { GroupMemory } from './tool-cgroups.js';

export interface RunProcessOptions {
  file: string;
  args: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to stdin; without it stdin is closed at once. */
  input?: string;
  timeoutMs: number;
  outputLimit: number;
  signal: AbortSignal;
  /** Run as this host user (the worker must be root). Default: the worker's own. */
  uid?: number;
  gid?: number;
  /**
   * Give the process pipes as file descriptors 3 and 4: bubblewrap's `--info-fd 3`, for `onSpawn` to
   * read, and a gate on 4, where the jail waits for one byte before it starts its program (sent once
   * `beforeStart` resolved, or at once without it; jail.ts).
   */
  infoPipe?: boolean;
  /** With `infoPipe`: bytes the process reads from file descriptor 5 (bubblewrap's `--seccomp 5`). */
  seccomp?: Buffer;
  /** Called as soon as the process exists. */
  onSpawn?: (child: ChildProcess) => void;
  /**
   * Runs once the process has started and before it may start its program (`infoPipe`'s fd 4). What it
   * returns is called at the end. When it throws, the process is killed and the error is thrown (a run
   * cancelled or timed out meanwhile ends as such instead).
   */
  beforeStart?: (child: ChildProcess) => Promise<() => void>;
  /**
   * Called when a timeout or a cancel kills the process group, and awaited before a killed run
   * returns: to end what the group kill cannot reach (a jail's own sessions). Default none.
   */
  onKill?: () => Promise<void>;
  /** The work directory's quota: watched while the process runs (stopped past it), measured after. */
  disk?: DiskQuota;
}

export interface ProcessOutcome {
  exitCode: number | undefined;
  output: string;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
  /** With a quota: what the folder holds after the run, and whether the run was stopped for it. */
  disk?: DiskCheck;
  /** In a cgroup (jail.ts): its memory limit, peak, and whether the run was ended for it. */
  memory?: GroupMemory;
  /** It started past its work directory's quota, and could only delete (jail.ts). */
  deleteOnly?: boolean;
}

/** Grace between SIGTERM and SIGKILL of the process group. */
const KILL_GRACE_MS = 500;

export async function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const started = performance.now();
  const collector = new OutputCollector(options.outputLimit);
  const gated = options.infoPipe === true;
  const child = spawn(options.file, options.args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    ...(options.uid !== undefined ? { uid: options.uid } : {}),
    ...(options.gid !== undefined ? { gid: options.gid } : {}),
    stdio: [
      options.input !== undefined ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      ...(gated ? (['pipe', 'pipe', ...(options.seccomp ? ['pipe' as const] : [])] as const) : []),
    ],
  });
  // Settles once the process ended and its output was read to the end; a process that could not
  // start (a missing program, a uid it may not take) says why, as its output.
  const ended = new Promise<number | undefined>((resolve) => {
    child.once('error', (error) => {
      collector.push(`could not start ${options.file}: ${error.message}`);
      resolve(undefined);
    });
    child.once('close', (code) => resolve(code ?? undefined));
  });
  options.onSpawn?.(child);
  // A process that exits without reading its input closes the pipe: its exit status says what happened.
  child.stdin?.on('error', () => undefined);
  if (options.input !== undefined) child.stdin?.end(options.input);
  if (gated && options.seccomp) {
    const filter = (child.stdio as unknown as Array<Writable | null>)[5];
    // A process that ends before reading its filter fails on its own, with its exit status.
    filter?.on('error', () => undefined);
    filter?.end(options.seccomp);
  }
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => collector.push(chunk));
  }

  let timedOut = false;
  let cancelled = false;
  let killed: Promise<void> | undefined;
  const killTree = () => {
    if (child.pid === undefined) return;
    signalGroup(child.pid, 'SIGTERM');
    setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS).unref();
    // Killing goes on whatever onKill meets: the process group is signalled above.
    killed ??= options.onKill?.().catch(() => undefined);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killTree();
  }, options.timeoutMs);
  const onAbort = () => {
    cancelled = true;
    killTree();
  };
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  const disk = options.disk && watchDisk(options.disk, killTree, child.pid);

  let release: (() => void) | undefined;
  try {
    if (gated) {
      try {
        release = await options.beforeStart?.(child);
        // The byte the process waits for.
        const gate = child.stdio[4] as Writable | null;
        // A process that ends before reading its go-ahead is seen by its exit status.
        gate?.on('error', () => undefined);
        gate?.end('x');
      } catch (error) {
        killTree();
        await ended;
        if (!cancelled && !timedOut) throw error;
      }
    }
    const exitCode = await ended;
    const diskCheck = await disk?.stop();
    if (timedOut || cancelled || diskCheck?.stopped) await killed;
    return {
      exitCode,
      output: collector.text(),
      timedOut,
      cancelled,
      durationMs: Math.round(performance.now() - started),
      ...(diskCheck ? { disk: diskCheck } : {}),
    };
  } finally {
    clearTimeout(timer);
    disk?.cancel();
    release?.();
    options.signal.removeEventListener('abort', onAbort);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

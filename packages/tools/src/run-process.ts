/**
 * Runs one tool process in its own process group, so a timeout or a cancel kills the whole tree
 * (a shell and everything it started), not just the shell. Output (stdout and stderr interleaved)
 * is capped while it streams.
 */
import { execa } from 'execa';
import { OutputCollector } from './cap-output.js';

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
}

export interface ProcessOutcome {
  exitCode: number | undefined;
  output: string;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
}

/** Grace between SIGTERM and SIGKILL of the process group. */
const KILL_GRACE_MS = 500;

export async function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const started = performance.now();
  const collector = new OutputCollector(options.outputLimit);
  const child = execa(options.file, options.args, {
    cwd: options.cwd,
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    all: true,
    buffer: false,
    stripFinalNewline: false,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' as const }),
  });
  child.all?.setEncoding('utf8');
  child.all?.on('data', (chunk: string) => collector.push(chunk));

  let timedOut = false;
  let cancelled = false;
  const killTree = () => {
    if (child.pid === undefined) return;
    signalGroup(child.pid, 'SIGTERM');
    setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS).unref();
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

  try {
    const result = await child;
    return {
      exitCode: result.exitCode,
      output: collector.text(),
      timedOut,
      cancelled,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    clearTimeout(timer);
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

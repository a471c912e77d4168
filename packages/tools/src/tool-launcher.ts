/**
 * Tool processes started by a small process of the worker's own, not by the worker. Starting a
 * process forks its parent, and the kernel copies the parent's page tables: in a worker with a 250 MB
 * heap a jailed `bash -c true` cost 11 ms of the worker's CPU, with its event loop held all along (loop
 * delay p99 over 500 ms at 20 calls at once, every other task of the worker waiting). The launcher's
 * heap is small, so its forks are cheap, and the worker's loop stays free (1.2 ms of CPU a call, loop
 * p99 10 ms; the calls themselves no slower).
 *
 * The launcher (tool-launcher-process.ts) runs the same `Jail` with the same options (or, for a worker
 * that opted out of the jail, the same plain processes), and only what the worker asks over its IPC
 * channel; it gets no environment but a PATH and TMPDIR (its own folder: no key, no Redis URL). It
 * ends with the worker: when the channel closes it kills every tool process it started and exits, and
 * bubblewrap's `--die-with-parent` ends any jail left. A launcher that dies is started again at the
 * next call; the calls it was running end as tool errors.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolError, type ToolErrorCode } from './errors.js';
import { SYSTEM_PATH, type JailOptions, type JailRunOptions } from './jail-options.js';
import type { ProcessOutcome, RunProcessOptions } from './run-process.js';

/**
 * What a run needs, without its signal (a cancel is a message of its own): in the launcher's jail, or
 * unjailed (AGENTQ_SANDBOX=none), a plain process.
 */
export type LaunchRequest =
  | { jailed: Omit<JailRunOptions, 'signal'> }
  | {
      unjailed: Pick<
        RunProcessOptions,
        'file' | 'args' | 'cwd' | 'env' | 'input' | 'timeoutMs' | 'outputLimit' | 'disk'
      >;
    };

/**
 * Worker -> launcher. `jail`: the jail it runs processes in; none for a launcher of unjailed ones.
 * `scratch`: its temporary folder (its TMPDIR), which it removes when it exits.
 */
export type ToLauncher =
  | { type: 'init'; jail?: JailOptions; scratch: string }
  | { type: 'run'; id: number; request: LaunchRequest }
  | { type: 'abort'; id: number };

/** Launcher -> worker. */
export type FromLauncher =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; id: number; outcome: ProcessOutcome }
  | { type: 'error'; id: number; message: string; code?: ToolErrorCode };

interface Pending {
  resolve(outcome: ProcessOutcome): void;
  reject(error: Error): void;
}

/** A launcher process and the calls it runs: one that ends fails its own calls, not a newer one's. */
interface Launched {
  child: ChildProcess;
  pending: Map<number, Pending>;
}

export class ToolLauncher {
  private current: Promise<Launched> | undefined;
  private nextId = 0;

  /** @param jail the jail its processes run in; without one, they run unjailed (AGENTQ_SANDBOX=none). */
  constructor(private readonly jail?: JailOptions) {}

  async run(request: LaunchRequest, signal: AbortSignal): Promise<ProcessOutcome> {
    const { child, pending } = await (this.current ??= this.start());
    const id = this.nextId++;
    const abort = () => send(child, { type: 'abort', id });
    try {
      return await new Promise<ProcessOutcome>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        // Only a call under way keeps the worker's process alive, never an idle launcher.
        child.channel?.ref();
        send(child, { type: 'run', id, request });
        if (signal.aborted) abort();
        else signal.addEventListener('abort', abort, { once: true });
      });
    } finally {
      signal.removeEventListener('abort', abort);
      pending.delete(id);
      if (pending.size === 0) child.channel?.unref();
    }
  }

  /** Ends the launcher (what it runs is killed). Calls after this start a new one. */
  async close(): Promise<void> {
    const starting = this.current;
    this.current = undefined;
    // A launcher that failed to start has nothing to close.
    const child = (await starting?.catch(() => undefined))?.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Waited for: this process stays up until the launcher is gone.
    child.ref();
    child.disconnect();
    await exited;
  }

  private start(): Promise<Launched> {
    // Its temporary files (its jail's copy of /etc) in a folder of its own, removed here once it ended,
    // however it ended (killed, it cannot remove them itself). Readable by the jails' uids.
    const scratch = mkdtempSync(path.join(tmpdir(), 'agentq-launcher-'));
    chmodSync(scratch, 0o755);
    const child = fork(launcherEntry(), [], {
      execArgv: [],
      // No secret: a system PATH, and where temporary files go.
      env: { PATH: SYSTEM_PATH.join(':'), TMPDIR: scratch },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    child.unref();
    const pending = new Map<number, Pending>();
    const started = new Promise<Launched>((resolve, reject) => {
      const ended = (why: string) => {
        if (this.current === started) this.current = undefined;
        reject(new ToolError('tool_unavailable', `${why} before it could start a process. Try the call again.`));
        for (const call of pending.values())
          call.reject(
            new ToolError(
              'tool_unavailable',
              `${why} while the process ran; what it did is unknown. Check the work directory, then try again.`,
            ),
          );
      };
      child.once('exit', (code, signal) => {
        ended(`this worker's tool launcher ended (${signal ?? `exit status ${code}`})`);
        // Scratch space only: what is left is under the worker's own temporary folder.
        void rm(scratch, { recursive: true, force: true }).catch(() => undefined);
      });
      child.once('error', (error) => ended(`this worker's tool launcher could not run (${error.message})`));
      child.on('message', (message: FromLauncher) => {
        switch (message.type) {
          case 'ready':
            child.channel?.unref();
            resolve({ child, pending });
            return;
          case 'failed':
            reject(new ToolError('tool_unavailable', message.message));
            child.disconnect();
            return;
          case 'done':
            pending.get(message.id)?.resolve(message.outcome);
            return;
          case 'error':
            pending
              .get(message.id)
              ?.reject(message.code ? new ToolError(message.code, message.message) : new Error(message.message));
        }
      });
    });
    // Settled by its caller; a launcher that fails to start is no unhandled rejection meanwhile.
    started.catch(() => undefined);
    send(child, { type: 'init', scratch, ...(this.jail ? { jail: this.jail } : {}) });
    return started;
  }
}

function send(child: ChildProcess, message: ToLauncher): void {
  // A launcher that just died says so through its exit; nothing to send it.
  if (child.connected) child.send(message);
}

/** The launcher's script: beside this module, or, when this runs from its TypeScript source (tests), the built one. */
function launcherEntry(): string {
  const here = fileURLToPath(import.meta.url);
  const dir = path.dirname(here);
  return here.endsWith('.ts')
    ? path.join(dir, '..', 'dist', 'tool-launcher-process.js')
    : path.join(dir, 'tool-launcher-process.js');
}

/**
 * How a worker runs process tools, decided once at start-up: in the jail (the default wherever the
 * machine allows it), without one (only when the operator opts out), or not at all (the jail was
 * wanted and cannot work here: the tools answer with why, and the operator is told how to fix it).
 */
import { AgentqError } from '@agentq/contract';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { findBwrap, Jail, type JailOptions } from './jail.js';
import { firstUnreachable } from './jail-identity.js';
import { ToolLauncher } from './tool-launcher.js';

export type ProcessIsolation =
  | { kind: 'jail'; jail: Jail }
  /** The operator's explicit opt-out (AGENTQ_SANDBOX=none); `launcher`: started from it, not from this process. */
  | { kind: 'none'; launcher?: ToolLauncher }
  /** AGENTQ_SANDBOX=auto on a machine where the jail cannot run: process tools are refused. */
  | { kind: 'unavailable'; reason: string };

export type SandboxMode = 'auto' | 'bwrap' | 'none';

class SandboxError extends AgentqError {
  readonly code = 'sandbox_unavailable';
  readonly retryable = false;
}

const UNJAILED_WARNING =
  "AGENTQ_SANDBOX=none: bash, python and node run WITHOUT a jail, as this worker's user: a task's code can read what that user can, reach the network, this host's services and Redis, and leave processes behind.";

/**
 * Decides the isolation of a worker's process tools, trying the jail for real in a work directory
 * under `workRoot`. `bwrap` throws a SandboxError when the jail cannot run; `auto` answers
 * `unavailable` with the reason. `jail.separateProcess` holds for `none` too: its unjailed processes
 * then start from a launcher.
 */
export async function chooseIsolation(options: {
  mode: SandboxMode;
  workRoot: string;
  jail: JailOptions;
}): Promise<ProcessIsolation> {
  if (options.mode === 'none')
    return options.jail.separateProcess ? { kind: 'none', launcher: new ToolLauncher() } : { kind: 'none' };
  const failure = (reason: string): ProcessIsolation => {
    if (options.mode === 'bwrap')
      throw new SandboxError(`AGENTQ_SANDBOX=bwrap, but the jail cannot run here: ${reason}`);
    return { kind: 'unavailable', reason };
  };
  if (!findBwrap()) return failure(`bubblewrap is not installed. ${INSTALL_HELP}`);
  let jail: Jail;
  try {
    jail = new Jail(options.jail);
  } catch (error) {
    return failure((error as Error).message);
  }
  const host = jail.cgroupHost;
  // `bwrap` wants every bound the jail gives; `auto` runs without a cgroup, and says what is lost (describe).
  const problem =
    options.mode === 'bwrap' && 'missing' in host
      ? `the tools' memory and processes cannot be bounded by a cgroup: ${host.missing}. ${CGROUP_HELP}`
      : await tryJail(jail, options.workRoot);
  if (!problem) return { kind: 'jail', jail };
  await jail.close();
  return failure(problem);
}

const CGROUP_HELP =
  'Run the worker as root, on a host with cgroup v2 (memory and pids delegated to its cgroup) or the v1 memory and pids hierarchies; in a container, give it a writable /sys/fs/cgroup (see docs/security.md). Or set AGENTQ_SANDBOX=auto to run the jail with per-process limits only.';

const INSTALL_HELP =
  'Install it (Debian/Ubuntu: apt-get install -y bubblewrap; Fedora: dnf install bubblewrap), or set AGENTQ_SANDBOX=none to run tools without a jail (not for untrusted tasks).';

/** Runs a command in the jail once, as a task would; the reason it failed, if it did. */
async function tryJail(jail: Jail, workRoot: string): Promise<string | undefined> {
  const workdir = path.resolve(workRoot, `.jail-check-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(workRoot, { recursive: true });
    if (jail.identity(workdir)) await openForSearch(workRoot);
    await jail.prepareWorkdir(workdir);
    if (jail.identity(workdir)) {
      const blocked = firstUnreachable(path.dirname(workdir));
      if (blocked) {
        return `the work directories under ${path.resolve(workRoot)} cannot be reached by other users (${blocked} is not searchable), and a root worker's tools run as their own unprivileged uid. Set AGENTQ_DATA_DIR to a folder others can search (e.g. /var/lib/agentq), or chmod o+x ${blocked}.`;
      }
    }
    const outcome = await jail.run({
      program: 'bash',
      command: 'echo jailed',
      workdir,
      timeoutMs: 10_000,
      outputLimit: 4_000,
      signal: new AbortController().signal,
    });
    if (outcome.exitCode === 0 && outcome.output.trim() === 'jailed') return undefined;
    return `bubblewrap failed (${outcome.output.trim() || `exit status ${outcome.exitCode}`}). It needs user namespaces: on a host, check that user.max_user_namespaces > 0 (and kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu); in a container, run it with --security-opt seccomp=unconfined --security-opt apparmor=unconfined (see docs/security.md). Or set AGENTQ_SANDBOX=none to run tools without a jail (not for untrusted tasks).`;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await rm(workdir, { recursive: true, force: true });
  }
}

/**
 * A root worker's jails run as other uids, which must reach their own work directory: the work root
 * (and the data directory holding it, both agentq's own) become searchable, never listable, by others.
 */
async function openForSearch(workRoot: string): Promise<void> {
  for (const folder of [path.resolve(workRoot), path.dirname(path.resolve(workRoot))]) {
    const { mode } = await stat(folder);
    // Others may enter (x), never read the names inside (r): the data folder lists api.json, work, mcp.
    const wanted = ((mode & 0o7777) | 0o001) & ~0o004;
    if ((mode & 0o7777) !== wanted) await chmod(folder, wanted);
  }
}

/** Ends the launcher an isolation has, if any (a later run starts another). */
export async function closeIsolation(isolation: ProcessIsolation): Promise<void> {
  if (isolation.kind === 'jail') await isolation.jail.close();
  if (isolation.kind === 'none') await isolation.launcher?.close();
}

/** One line per isolation, for logs, `agentq doctor` and the pools page. */
export function describeIsolation(isolation: ProcessIsolation): string {
  switch (isolation.kind) {
    case 'jail':
      return isolation.jail.describe();
    case 'none':
      return `no jail. ${UNJAILED_WARNING}`;
    case 'unavailable':
      return `process tools refused: ${isolation.reason}`;
  }
}

/**
 * The jail every process tool (bash, python, node) runs in, with bubblewrap. What a jailed process has:
 *
 * - its own user namespace, as uid 1000 with no capability (and no way to make more namespaces); on
 *   the host an unprivileged uid of its own when the worker is root (see jail-identity.ts);
 * - its own PID namespace: nothing it starts outlives the tool call (a `setsid`, `nohup` or double fork
 *   included), and nothing survives the worker (`--die-with-parent`);
 * - its own network namespace: only its own loopback, or the filtered `egress` (jail-egress.ts);
 * - the system read-only (`/usr`, a copy of a short list of `/etc` made by jail-files.ts, the
 *   interpreters), the task's work directory read-write at its real path, a private `/tmp`, its own
 *   `/proc`; nothing else of the machine: no home folders, no other task, no host `/proc`, no worker
 *   environment, no file descriptor of the worker's but its output pipes;
 * - a cgroup of its own per run (tool-cgroups.ts), which its processes join before they run anything:
 *   the memory of the whole run (every page, tmpfs included, no swap), its processes and its CPU weight,
 *   ended whole when its memory is exhausted; an out-of-memory score of 1000 it cannot lower, so that the
 *   kernel kills a tool before anything else of the machine;
 * - hard rlimits too, set by the bash that starts every program: processes, memory, CPU time, file size.
 */
import { chownSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ToolError } from './errors.js';
import { attachEgress, egressRules, findEgressTools, type EgressTools } from './jail-egress.js';
import {
  JAIL_UID,
  limitsLine,
  removeJailFiles,
  writeJailFiles,
  type JailFiles,
  type JailLimits,
} from './jail-files.js';
import { killPidNamespace, readJailInfo, type JailInfo } from './jail-info.js';
import { deniedCalls, seccompFilter } from './jail-seccomp.js';
import { describeCgroups, findCgroups, ToolCgroups, type CgroupHost, type RunGroup } from './tool-cgroups.js';
import { jailIdentity, reachableByOthers, type HostIdentity } from './jail-identity.js';
import { resolveInterpreters, type Interpreters } from './interpreters.js';
import {
  SYSTEM_PATH,
  type JailOptions,
  type JailProgram,
  type JailRunOptions,
  type ToolNetwork,
} from './jail-options.js';
import { runProcess, type ProcessOutcome } from './run-process.js';
import { ToolLauncher } from './tool-launcher.js';

export type { JailOptions, JailProgram, JailRunOptions, ToolNetwork } from './jail-options.js';

/** A program the jail keeps running (jail.startServer): its pipes, and how to end it. */
export interface JailedServer {
  process: ChildProcess;
  /** Ends it and every process it started (its cgroup, its PID namespace). */
  stop(): Promise<void>;
}

/**
 * Closes every descriptor above stderr the jail's bash was handed: a descriptor the worker inherited
 * without close-on-exec (from a shell, a supervisor) would otherwise reach the task's code, which
 * could read or write it.
 */
const CLOSE_INHERITED = 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; ';

/**
 * The jail's first line waits for one byte on fd 4, sent once its processes are in their cgroup with
 * their OOM score and its network is set, and ends the jail unless that byte came: a worker (or launcher)
 * that died meanwhile closes the pipe, and nothing of the task runs. (bubblewrap's own `--block-fd` goes
 * on at end of file: a jail whose launcher was killed while it waited ran its command, orphaned.)
 */
export const JAIL_GATE = 'read -r -n 1 -u 4 go; [ "$go" = x ] || exit 125; ';

export function findBwrap(): string | undefined {
  return ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'].find((file) => existsSync(file));
}

export class Jail {
  readonly network: ToolNetwork;
  readonly limits: JailLimits;
  /** The interpreters a jailed process can run; a missing one says why in `unavailable`. */
  readonly interpreters: Partial<Interpreters>;
  readonly unavailable: Partial<Record<JailProgram, string>> = {};
  private readonly bwrap: string;
  private readonly limitsLine: string;
  private readonly egress: EgressTools | undefined;
  private readonly rules: string;
  private readonly baseArgs: string[];
  /** Its copy of /etc (none when its launcher runs its processes: the launcher has its own). */
  private readonly files: JailFiles | undefined;
  private readonly endArgs: string[];
  private readonly launcher: ToolLauncher | undefined;
  /** Where runs get their cgroups, or why they cannot (then memory is bounded per process only). */
  readonly cgroupHost: CgroupHost | { missing: string };
  private readonly cgroups: ToolCgroups | undefined;
  /** The seccomp filter its programs run under (jail-seccomp.ts); none on an architecture without a table. */
  private readonly seccomp = seccompFilter();
  /** The same, for a run that starts past its work directory's quota: it may only delete. */
  private readonly deleteOnlySeccomp = seccompFilter({ deleteOnly: true });

  constructor(options: JailOptions) {
    const bwrap = options.bwrap ?? findBwrap();
    if (!bwrap) throw new ToolError('tool_unavailable', 'bubblewrap is not installed');
    this.bwrap = bwrap;
    this.network = options.network;
    this.limits = options.limits;
    this.limitsLine = limitsLine(options.limits);
    if (options.network === 'egress') {
      // The firewall goes into the jail's namespace from outside, which takes CAP_SYS_ADMIN here.
      if (process.getuid?.() !== 0)
        throw new ToolError(
          'tool_unavailable',
          'AGENTQ_TOOL_NETWORK=egress needs the worker to run as root (it sets the firewall of each jail from outside)',
        );
      const tools = findEgressTools();
      if ('missing' in tools)
        throw new ToolError(
          'tool_unavailable',
          `the egress network needs ${tools.missing.join(', ')} (apt-get install -y slirp4netns nftables util-linux)`,
        );
      this.egress = tools;
    }
    this.rules = egressRules({ ...(options.deny ? { deny: options.deny } : {}) });

    const asRoot = process.getuid?.() === 0;
    const wanted = options.interpreters ?? resolveInterpreters();
    const roots = new Set<string>();
    this.interpreters = { bash: wanted.bash };
    for (const program of ['python', 'node'] as const) {
      const found = usableInterpreter({ program, wanted: wanted[program], asRoot, hidden: options.hidden ?? [] });
      if ('reason' in found) this.unavailable[program] = found.reason;
      else {
        this.interpreters[program] = found.file;
        if (found.root) roots.add(found.root);
      }
    }

    let host = findCgroups();
    // Made where the processes start: here, or in the launcher.
    if (!options.separateProcess && !('missing' in host)) {
      try {
        this.cgroups = ToolCgroups.open(host);
      } catch (error) {
        host = { missing: `its cgroup folders could not be made (${(error as Error).message})` };
      }
    }
    this.cgroupHost = host;
    // A jail whose processes its launcher starts needs no arguments (nor /etc copy) of its own here.
    this.files = options.separateProcess ? undefined : writeJailFiles({ network: options.network });
    this.baseArgs = this.files
      ? baseArgs({ etc: this.files.etc, network: options.network, limits: options.limits, roots })
      : [];
    // Last: the root of the jail becomes read-only once every mount point in it exists.
    this.endArgs = ['--remount-ro', '/'];
    // The launcher's jail is this one: the same binaries, resolved here once.
    this.launcher = options.separateProcess
      ? new ToolLauncher({ ...options, bwrap, interpreters: wanted, separateProcess: false })
      : undefined;
  }

  /**
   * Ends its launcher, if it has one (a later run starts another); a jail that runs its processes
   * itself removes its copy of /etc, and runs nothing after.
   */
  async close(): Promise<void> {
    await this.launcher?.close();
    this.cgroups?.close();
    if (this.files) removeJailFiles(this.files);
  }

  /** One line for logs and `agentq doctor`. */
  describe(): string {
    const { processes, memoryMb, fileMb, cpuSeconds } = this.limits;
    const identity =
      process.getuid?.() === 0 ? 'an unprivileged uid per task' : `uid ${process.getuid?.() ?? '?'} (the worker's own)`;
    const missing = Object.entries(this.unavailable).map(([program, reason]) => `; no ${program}: ${reason}`);
    const host = this.cgroupHost;
    const bounds =
      'missing' in host
        ? `${processes} processes, ${memoryMb} MiB memory (heap, per process only: NO cgroup, ${host.missing}; shared memory, memfd and tmpfs files are not bounded) and ${fileMb} MiB files per process`
        : `${describeCgroups(host)} per run: ${memoryMb} MiB memory and ${processes} processes for the whole run, ${fileMb} MiB files per process`;
    const filter = this.seccomp
      ? `seccomp filter (${deniedCalls().length} calls refused)`
      : `NO seccomp filter (no table for ${process.arch})`;
    return `bubblewrap jail as ${identity}, network ${this.network}, ${filter}, limits ${bounds}, ${cpuSeconds} s CPU${missing.join('')}`;
  }

  /** The host user a work directory's tools run as, when that is not the worker's own. */
  identity(workdir: string): HostIdentity | undefined {
    return jailIdentity(workdir);
  }

  /**
   * Creates a task's work directory, owned by the user its tools run as: on this thread, two system calls,
   * where each trip through the thread pool would wait for a turn of a busy loop.
   */
  async prepareWorkdir(workdir: string): Promise<void> {
    mkdirSync(workdir, { recursive: true, mode: 0o700 });
    const identity = this.identity(workdir);
    if (identity) chownSync(workdir, identity.uid, identity.gid);
  }

  async run(options: JailRunOptions): Promise<ProcessOutcome> {
    if (this.launcher) {
      const { signal, ...request } = options;
      return this.launcher.run({ jailed: request }, signal);
    }
    const interpreter = this.interpreters[options.program];
    if (!interpreter) {
      throw new ToolError(
        'tool_unavailable',
        `${options.program} cannot run on this worker (${this.unavailable[options.program] ?? 'not installed'}). Use another tool for this step.`,
      );
    }
    const bash = this.interpreters.bash!;
    // bash starts every jailed program, closes what it inherited and sets the limits before anything
    // else runs: in front of a bash command on the same line, or before it replaces itself with the
    // interpreter.
    // Past its quota when it starts, a run may only delete: no file grows, no name is made (the filter).
    const deleteOnly = options.disk?.over === true && this.deleteOnlySeccomp !== undefined;
    const prelude = `${JAIL_GATE}${CLOSE_INHERITED}${this.limitsLine}${deleteOnly ? 'ulimit -f 0 || exit 126; ' : ''}`;
    const seccomp = deleteOnly ? this.deleteOnlySeccomp : this.seccomp;
    const launch =
      options.program === 'bash'
        ? [bash, '-c', `${prelude}${options.command ?? ''}`]
        : [bash, '-c', `${prelude}exec "$0" "$@"`, interpreter, ...(options.args ?? [])];
    const egress = this.egress;
    const identity = this.identity(options.workdir);
    let info: Promise<JailInfo | undefined> = Promise.resolve(undefined);
    const group = this.cgroups?.create({
      memoryBytes: this.limits.memoryMb * 1024 * 1024,
      processes: this.limits.processes,
    });
    let watch: NodeJS.Timeout | undefined;
    const end = async () => {
      group?.kill();
      const reported = await info;
      if (reported) killPidNamespace(reported.pidNamespace);
    };
    try {
      const outcome = await runProcess({
        file: this.bwrap,
        args: [
          ...this.baseArgs,
          '--bind',
          options.workdir,
          options.workdir,
          '--chdir',
          options.workdir,
          '--setenv',
          'HOME',
          options.workdir,
          '--info-fd',
          '3',
          ...(seccomp ? ['--seccomp', '5'] : []),
          ...this.endArgs,
          '--',
          ...launch,
        ],
        cwd: '/',
        env: { PATH: SYSTEM_PATH.join(':') },
        ...(options.input !== undefined ? { input: options.input } : {}),
        timeoutMs: options.timeoutMs,
        outputLimit: options.outputLimit,
        signal: options.signal,
        ...(options.disk ? { disk: options.disk } : {}),
        ...(identity ?? {}),
        infoPipe: true,
        ...(seccomp ? { seccomp } : {}),
        // fd 3 is the info pipe (fd 4 the gate).
        onSpawn: (child) => (info = readJailInfo(child.stdio[3] as Readable)),
        // Killing bwrap's process group does not reach the jail's own sessions: end its group and namespace.
        onKill: end,
        beforeStart: async (child) => {
          const reported = await info;
          if (!reported || child.pid === undefined)
            throw new ToolError('tool_unavailable', 'the jail ended before it started its program');
          const pids = [child.pid, reported.childPid];
          contain(pids, group);
          if (group && !group.endsWholeOnOom) {
            // A run past its memory is ended whole, not only its largest process.
            watch = setInterval(() => {
              if (group.memoryKills() > 0) void end();
            }, MEMORY_LOOK_MS);
          }
          const release = egress ? await this.connect(reported, egress) : undefined;
          return () => {
            clearInterval(watch);
            release?.();
          };
        },
      });
      return { ...outcome, ...(group ? { memory: group.memory() } : {}), ...(deleteOnly ? { deleteOnly } : {}) };
    } finally {
      clearInterval(watch);
      // Off the call's path: a group's last process may take a moment to be gone.
      if (group) void this.cgroups?.release(group);
    }
  }

  /**
   * Starts a long-lived program in the jail (an MCP server speaking on its stdin and stdout): the
   * same namespaces, system, seccomp filter, cgroup and network as a tool run. It starts in `dir`, its
   * own files, read-only; without one in an empty read-only folder: never where anything a task or
   * the server itself writes could be loaded as its code (`python -m`, node's and npx's resolution
   * look in the working directory first). `home` (its HOME, made here) is read-write, and so is
   * `taskDir`, the folder of the task a `scope: task` server works on, named by `AGENTQ_TASK_DIR`; such
   * a server runs as the task's user. Its environment is `env` alone (never the worker's), and no user
   * site of Python's. No CPU-time limit: it serves call after call. Resolves once it runs (past the
   * jail's gate); `stop()` ends it and everything it started.
   */
  async startServer(options: {
    command: string;
    args: readonly string[];
    env: Readonly<Record<string, string>>;
    dir?: string | undefined;
    home: string;
    taskDir?: string | undefined;
  }): Promise<JailedServer> {
    if (!this.files) throw new ToolError('tool_unavailable', 'this jail starts its processes from a launcher');
    const bash = this.interpreters.bash!;
    const limits = this.limitsLine.replace(/ -t \d+/, '');
    const identity = this.identity(options.taskDir ?? options.home);
    mkdirSync(options.home, { recursive: true, mode: 0o700 });
    if (identity) chownSync(options.home, identity.uid, identity.gid);
    const cwd = options.dir ?? EMPTY_SERVER_FOLDER;
    const group = this.cgroups?.create({
      memoryBytes: this.limits.memoryMb * 1024 * 1024,
      processes: this.limits.processes,
    });
    const args = [
      // The server's environment comes from the spawn below (only its own variables), not a cleared one.
      ...this.baseArgs.filter((arg) => arg !== '--clearenv'),
      ...(options.dir ? ['--ro-bind', options.dir, options.dir] : ['--dir', EMPTY_SERVER_FOLDER]),
      '--bind',
      options.home,
      options.home,
      ...(options.taskDir ? ['--bind', options.taskDir, options.taskDir] : []),
      '--chdir',
      cwd,
      '--setenv',
      'HOME',
      options.home,
      '--info-fd',
      '3',
      ...(this.seccomp ? ['--seccomp', '5'] : []),
      ...this.endArgs,
      '--',
      bash,
      '-c',
      `${JAIL_GATE}${CLOSE_INHERITED}${limits}exec "$0" "$@"`,
      options.command,
      ...options.args,
    ];
    const child = spawn(this.bwrap, args, {
      cwd: '/',
      env: {
        ...options.env,
        PYTHONNOUSERSITE: '1',
        ...(options.taskDir ? { AGENTQ_TASK_DIR: options.taskDir } : {}),
      },
      detached: true,
      ...(identity ?? {}),
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', ...(this.seccomp ? (['pipe'] as const) : [])],
    });
    const info = readJailInfo(child.stdio[3] as Readable);
    const pipes = child.stdio as unknown as Array<Writable | null>;
    if (this.seccomp) {
      // A jail that ends before reading its filter fails below with the reason (it never started).
      pipes[5]?.on('error', () => undefined);
      pipes[5]?.end(this.seccomp);
    }
    let release: (() => void) | undefined;
    const stop = async () => {
      release?.();
      group?.kill();
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      const reported = await info;
      if (reported) killPidNamespace(reported.pidNamespace);
      if (group) void this.cgroups?.release(group);
    };
    try {
      const reported = await Promise.race([
        info,
        new Promise<undefined>((resolve) => child.once('exit', () => resolve(undefined))),
      ]);
      if (!reported || child.pid === undefined)
        throw new ToolError('tool_unavailable', 'the jail ended before it started the server');
      contain([child.pid, reported.childPid], group);
      release = this.egress ? await this.connect(reported, this.egress) : undefined;
      // A jail that ends before reading its go-ahead is seen below, by its exit.
      pipes[4]?.on('error', () => undefined);
      pipes[4]?.end('x');
    } catch (error) {
      await stop();
      throw error;
    }
    return { process: child, stop };
  }

  /** Gives the jail's namespace the egress network. */
  private async connect(reported: JailInfo, tools: EgressTools): Promise<() => void> {
    try {
      return await attachEgress({ pid: reported.childPid, tools, rules: this.rules });
    } catch (error) {
      throw new ToolError(
        'tool_unavailable',
        `The jail's network could not be set up: ${(error as Error).message} (the egress network needs a root worker with CAP_SYS_ADMIN; in a container, cap_add: [SYS_ADMIN])`,
      );
    }
  }
}

/** Where a server without a folder of its own starts: made empty in the jail's root, read-only. */
const EMPTY_SERVER_FOLDER = '/mcp-server';

/** How often a run's group is looked at for a process the kernel killed for memory. */
const MEMORY_LOOK_MS = 100;

/**
 * Puts a starting jail's processes (bubblewrap's and the jail's first, before it starts the program)
 * in the run's group, and gives them the highest out-of-memory score. Written by this root process, the
 * score is also the least the jail may set (the kernel's oom_score_adj_min): a tool cannot lower it.
 */
function contain(pids: readonly number[], group: RunGroup | undefined): void {
  group?.join(pids);
  // What the jail's first process started before it moved (the prelude's bash, waiting at the gate);
  // what it starts after is born in the group.
  const first = pids.at(-1)!;
  const started = readChildren(first);
  if (started.length) group?.join(started);
  for (const pid of [...pids, ...started]) {
    try {
      writeFileSync(`/proc/${pid}/oom_score_adj`, '1000');
    } catch {
      // Not this worker's to set (an unusual /proc): the group's bound still holds.
    }
  }
}

/** A process's children, from /proc (none when it is gone). */
function readChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * bubblewrap's arguments for every run of a jail, up to its work directory: the namespaces, the
 * read-only system (with a copy of /etc written now), the interpreters' folders, the environment.
 */
function baseArgs(options: {
  etc: string;
  network: ToolNetwork;
  limits: JailLimits;
  roots: ReadonlySet<string>;
}): string[] {
  const { roots } = options;
  const binds = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['bin', 'lib', 'lib32', 'lib64', 'libx32', 'sbin']) {
    const host = `/${top}`;
    if (!existsSync(host)) continue;
    // Merged /usr: the top folders are links into it; elsewhere they are folders of their own.
    if (lstatSync(host).isSymbolicLink()) binds.push('--symlink', `usr/${top}`, host);
    else binds.push('--ro-bind', host, host);
  }
  binds.push('--ro-bind', options.etc, '/etc');
  for (const root of roots) binds.push('--ro-bind', root, root);

  const fileBytes = String(options.limits.fileMb * 1024 * 1024);
  const pathDirs = [...[...roots].map((root) => path.join(root, 'bin')), ...SYSTEM_PATH];
  return [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--uid',
    String(JAIL_UID),
    '--gid',
    String(JAIL_UID),
    '--hostname',
    'agentq',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    ...binds,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    fileBytes,
    '--tmpfs',
    '/dev/shm',
    '--size',
    fileBytes,
    '--tmpfs',
    '/tmp',
    '--clearenv',
    '--setenv',
    'PATH',
    pathDirs.join(':'),
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--setenv',
    'TERM',
    'dumb',
    '--setenv',
    'USER',
    'agentq',
    '--setenv',
    'LOGNAME',
    'agentq',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--setenv',
    'PYTHONUNBUFFERED',
    '1',
    '--setenv',
    'PYTHONDONTWRITEBYTECODE',
    '1',
  ];
}

/** Where an interpreter the jail can run lives, and the folder to bind for it (outside /usr). */
function usableInterpreter(options: {
  program: 'python' | 'node';
  wanted: string;
  asRoot: boolean;
  hidden: readonly string[];
}): { file: string; root?: string } | { reason: string } {
  const candidates = [options.wanted, options.program === 'python' ? '/usr/bin/python3' : '/usr/bin/node'];
  let reason = `${options.wanted} was not found`;
  for (const candidate of candidates) {
    if (!path.isAbsolute(candidate) || !existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (real.startsWith('/usr/')) return { file: real };
    const root = interpreterRoot(real);
    // A root worker's jails run as another uid, and bubblewrap opens what it binds as that uid.
    if (options.asRoot && !reachableByOthers(root)) {
      reason = `${root} cannot be read by other users, and a root worker's tools run as their own uid`;
      continue;
    }
    // Its folder is bound whole: one that holds the data folder would show every task's folder.
    const held = options.hidden.find((place) => place === root || place.startsWith(`${root}${path.sep}`));
    if (held) {
      reason = `its folder ${root} holds ${held}, which no jail may see (install it elsewhere, or move that folder out of ${root})`;
      continue;
    }
    return { file: real, root };
  }
  return { reason };
}

/** The folder an interpreter needs: a Python's prefix (its standard library), a Node's install prefix. */
function interpreterRoot(real: string): string {
  // bin/python3.11 -> the prefix above bin/, which holds lib/python3.11 (pyenv, conda, nvm, a tarball).
  const prefix = path.dirname(path.dirname(real));
  return prefix.split(path.sep).filter(Boolean).length >= 2 ? prefix : path.dirname(real);
}

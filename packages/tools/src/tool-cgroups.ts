/**
 * A cgroup per jailed tool run: the kernel, not a per-process rlimit, bounds what a run's processes hold
 * together. Memory counts every page they are charged (heap, shared anonymous maps, memfd files, the
 * jail's tmpfs `/tmp` and `/dev/shm`, page cache) with no swap; processes are counted by the group;
 * every run weighs on the CPU as one process of the machine. A run past its memory is killed whole.
 *
 * cgroup v2 where the host gives its controllers to it; else the v1 `memory` and `pids` hierarchies
 * (and `cpu` where mounted). Under the cgroup of the process that runs tools (a worker, or its
 * launcher): `agentq/`, shared by every agentq process there, whose memory is bounded to 3/4 of what
 * that cgroup may use (the machine's, at most), so that all the runs together can never take the
 * machine's memory (the kernel then kills inside `agentq/`, never the worker, the API or Redis, whatever
 * a tool did to its own out-of-memory score); in it `<pid>/`, one a process, and a run's group in that.
 * Folders a process that died left behind are removed by the next one. It needs root (or a delegated
 * cgroup): where it cannot, `findCgroups` says why and nothing is bounded but by rlimits.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface GroupLimits {
  /** Memory of the whole run, every process together, in bytes. */
  memoryBytes: number;
  /** Processes and threads of the whole run. */
  processes: number;
}

/** Where a process's tool runs get their groups: a folder per hierarchy (one for v2). */
export type CgroupHost =
  { version: 2; own: string; cpu: boolean } | { version: 1; memory: string; pids: string; cpu: string | undefined };

/** What a run's group saw of its memory. */
export interface GroupMemory {
  limitBytes: number;
  /** The most it held at once (undefined where the kernel does not say). */
  peakBytes: number | undefined;
  /** The kernel killed one of its processes for memory, and so the run was ended. */
  exhausted: boolean;
}

/** The run groups' CPU weight against each other, and their folder's against the rest of the machine (as one process). */
const V1_SHARES = '1024';
const V2_WEIGHT = '100';

/** The share of its cgroup's memory (or the machine's) that all tool runs under it may hold together. */
const SHARED_MEMORY_SHARE = 0.75;

/** A cgroup that cannot be removed at once (its last process still exiting) is tried again, this often. */
const REMOVE_TRIES = 100;
const REMOVE_EVERY_MS = 10;
/** Empty groups kept for the next runs, at most. */
const MAX_IDLE_GROUPS = 64;

/** Whether this process can give tool runs cgroups, read from /proc (nothing is written): where, or why not. */
export function findCgroups(): CgroupHost | { missing: string } {
  if (process.getuid?.() !== 0)
    return { missing: 'the worker is not root, and only root can give each tool run a cgroup' };
  let mounts: string;
  let own: string;
  try {
    mounts = readFileSync('/proc/self/mounts', 'utf8');
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch (error) {
    return { missing: `/proc cannot be read (${(error as Error).message})` };
  }
  const v1 = (controller: string) => {
    const mount = mounts
      .split('\n')
      .map((line) => line.split(' '))
      .find((fields) => fields[2] === 'cgroup' && fields[3]?.split(',').includes(controller))?.[1];
    const place = own
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => fields[1]?.split(',').includes(controller))?.[2];
    return mount && place !== undefined ? writable(path.join(mount, place)) : undefined;
  };
  const memory = v1('memory');
  const pids = v1('pids');
  if (memory && pids) return { version: 1, memory, pids, cpu: v1('cpu') };
  const unified = mounts
    .split('\n')
    .map((line) => line.split(' '))
    .find((fields) => fields[2] === 'cgroup2')?.[1];
  const place = own
    .split('\n')
    .find((line) => line.startsWith('0::'))
    ?.slice(3);
  if (unified && place !== undefined) {
    const folder = path.join(unified, place);
    const controllers = readText(path.join(folder, 'cgroup.controllers'))?.split(/\s+/) ?? [];
    if (controllers.includes('memory') && controllers.includes('pids') && writable(folder))
      return { version: 2, own: folder, cpu: controllers.includes('cpu') };
    return {
      missing: `the cgroup v2 of this process (${folder}) has no memory and pids controllers to give, or cannot be written`,
    };
  }
  return { missing: 'no cgroup hierarchy with the memory and pids controllers is mounted (/sys/fs/cgroup)' };
}

/** The folders a process's tool runs get their groups in; made by `open`, removed by `close`. */
/** Instances opened in this process: each takes a folder of its own. */
let opened = 0;

export class ToolCgroups {
  private next = 0;
  private readonly folders: string[];
  private readonly idle: RunGroup[] = [];

  private constructor(
    readonly host: CgroupHost,
    private readonly base: { memory: string; pids: string; cpu?: string | undefined },
  ) {
    this.folders = [...new Set(Object.values(base).filter((folder): folder is string => folder !== undefined))];
  }

  /**
   * Makes this instance's folders (removing what dead processes left); throws with the reason when it
   * cannot. Each instance of a process has folders of its own (`<pid>`, then `<pid>-2`...): a worker may
   * hold several jails (its MCP servers' beside its tools'), and each names and removes only its own runs.
   */
  static open(host: CgroupHost): ToolCgroups {
    opened++;
    const name = opened === 1 ? String(process.pid) : `${process.pid}-${opened}`;
    if (host.version === 1) {
      const shared = {
        memory: path.join(host.memory, SHARED),
        pids: path.join(host.pids, SHARED),
        cpu: host.cpu && path.join(host.cpu, SHARED),
      };
      for (const folder of new Set(Object.values(shared))) if (folder) mkdirSync(folder, { recursive: true });
      // Hierarchical limits and counting: the default on current kernels, set where it is not.
      if (readText(path.join(shared.memory, 'memory.use_hierarchy')) === '0')
        writeFileSync(path.join(shared.memory, 'memory.use_hierarchy'), '1');
      writeFileSync(
        path.join(shared.memory, 'memory.limit_in_bytes'),
        String(sharedMemory(path.join(host.memory, 'memory.limit_in_bytes'))),
      );
      if (shared.cpu) writeFileSync(path.join(shared.cpu, 'cpu.shares'), V1_SHARES);
      for (const folder of new Set(Object.values(shared))) if (folder) removeLeftovers(folder);
      const base = {
        memory: path.join(shared.memory, name),
        pids: path.join(shared.pids, name),
        cpu: shared.cpu && path.join(shared.cpu, name),
      };
      for (const folder of new Set(Object.values(base))) if (folder) mkdirSync(folder, { recursive: true });
      return new ToolCgroups(host, base);
    }
    const controllers = host.cpu ? '+memory +pids +cpu' : '+memory +pids';
    enableControllers(host.own, controllers);
    const shared = path.join(host.own, SHARED);
    mkdirSync(shared, { recursive: true });
    writeFileSync(path.join(shared, 'cgroup.subtree_control'), controllers);
    writeFileSync(path.join(shared, 'memory.max'), String(sharedMemory(path.join(host.own, 'memory.max'))));
    if (host.cpu) writeFileSync(path.join(shared, 'cpu.weight'), V2_WEIGHT);
    removeLeftovers(shared);
    const folder = path.join(shared, name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'cgroup.subtree_control'), controllers);
    return new ToolCgroups(host, { memory: folder, pids: folder, cpu: host.cpu ? folder : undefined });
  }

  /**
   * A group for one run, with its limits set and nothing in it: one an earlier run left empty, else a
   * new one (making and removing a memory cgroup cost a tool call about 5 ms, measured).
   */
  create(limits: GroupLimits): RunGroup {
    const reused = this.idle.pop();
    if (reused) {
      try {
        reused.reset(limits);
        return reused;
      } catch {
        void reused.remove();
      }
    }
    const name = `run-${this.next++}`;
    const memory = path.join(this.base.memory, name);
    const pids = path.join(this.base.pids, name);
    const cpu = this.base.cpu && path.join(this.base.cpu, name);
    const group = new RunGroup(this.host.version, { memory, pids, cpu });
    try {
      for (const folder of group.folders) mkdirSync(folder);
      if (cpu)
        writeFileSync(
          path.join(cpu, this.host.version === 1 ? 'cpu.shares' : 'cpu.weight'),
          this.host.version === 1 ? V1_SHARES : V2_WEIGHT,
        );
      // The kernel kills the whole run, not only its largest process.
      if (this.host.version === 2) writeFileSync(path.join(memory, 'memory.oom.group'), '1');
      group.reset(limits);
    } catch (error) {
      for (const folder of group.folders) removeGroup(folder);
      throw error;
    }
    return group;
  }

  /** Once a run's processes are all gone, its group waits for the next run (or is removed, when it does not empty). */
  async release(group: RunGroup): Promise<void> {
    for (let attempt = 0; attempt < REMOVE_TRIES; attempt++) {
      if (group.empty()) {
        if (this.idle.length < MAX_IDLE_GROUPS) this.idle.push(group);
        else await group.remove();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, REMOVE_EVERY_MS));
    }
    group.kill();
    await group.remove();
  }

  /** Removes this process's folders (their runs have ended). */
  close(): void {
    for (const folder of this.folders) {
      for (const entry of safeList(folder)) removeGroup(path.join(folder, entry));
      removeGroup(folder);
    }
  }
}

/** "cgroup v1 (memory, pids, cpu)" */
export function describeCgroups(host: CgroupHost): string {
  const cpu = host.version === 1 ? host.cpu !== undefined : host.cpu;
  return `cgroup v${host.version} (memory, pids${cpu ? ', cpu' : ''})`;
}

/** One run's group: its processes join it before they run anything; once they are gone, it serves another run. */
export class RunGroup {
  readonly folders: string[];
  private limitBytes = 0;
  /** The kernel's kill count when this run began (it only grows), and whether the peak could be reset. */
  private killsBefore = 0;
  private peakKnown = true;

  constructor(
    private readonly version: 1 | 2,
    private readonly place: { memory: string; pids: string; cpu?: string | undefined },
  ) {
    this.folders = [...new Set(Object.values(place).filter((folder): folder is string => folder !== undefined))];
  }

  /** Sets the limits of the next run, and starts its counts afresh. */
  reset(limits: GroupLimits): void {
    const bytes = String(limits.memoryBytes);
    const { memory, pids } = this.place;
    if (this.version === 1) {
      // Memory and swap together are bounded by the same figure (where swap is counted): no swap. Raised
      // in the order the kernel accepts (memsw at least the limit).
      const swap = path.join(memory, 'memory.memsw.limit_in_bytes');
      const limit = path.join(memory, 'memory.limit_in_bytes');
      const lowering = limits.memoryBytes < Number(readText(limit));
      if (lowering) writeFileSync(limit, bytes);
      writeIfPresent(swap, bytes);
      if (!lowering) writeFileSync(limit, bytes);
      writeIfPresent(path.join(memory, 'memory.swappiness'), '0');
      writeFileSync(path.join(memory, 'memory.max_usage_in_bytes'), '0');
      writeFileSync(path.join(pids, 'pids.max'), String(limits.processes));
    } else {
      writeFileSync(path.join(memory, 'memory.max'), bytes);
      writeIfPresent(path.join(memory, 'memory.swap.max'), '0');
      writeFileSync(path.join(pids, 'pids.max'), String(limits.processes));
      // memory.peak can be reset from Linux 6.12 on; before, it is the group's whole life's.
      try {
        writeFileSync(path.join(memory, 'memory.peak'), 'reset');
        this.peakKnown = true;
      } catch {
        this.peakKnown = this.killsBefore === 0 && this.limitBytes === 0;
      }
    }
    this.limitBytes = limits.memoryBytes;
    this.killsBefore = this.allMemoryKills();
  }

  /** The kernel ends the whole run when it kills one of its processes for memory (v2's memory.oom.group). */
  get endsWholeOnOom(): boolean {
    return this.version === 2;
  }

  /** No process left in it. */
  empty(): boolean {
    return this.folders.every((folder) => !readText(path.join(folder, 'cgroup.procs')));
  }

  /** Moves processes into the group (each hierarchy, for v1); what they start from then on is in it too. */
  join(pids: readonly number[]): void {
    for (const folder of this.folders)
      for (const pid of pids) writeFileSync(path.join(folder, 'cgroup.procs'), String(pid));
  }

  /** How many of this run's processes the kernel killed for memory so far. */
  memoryKills(): number {
    return this.allMemoryKills() - this.killsBefore;
  }

  private allMemoryKills(): number {
    const text = readText(path.join(this.place.memory, this.version === 1 ? 'memory.oom_control' : 'memory.events'));
    return Number(/^oom_kill (\d+)$/m.exec(text ?? '')?.[1] ?? 0);
  }

  memory(): GroupMemory {
    const peak = this.peakKnown
      ? readText(path.join(this.place.memory, this.version === 1 ? 'memory.max_usage_in_bytes' : 'memory.peak'))
      : undefined;
    return {
      limitBytes: this.limitBytes,
      peakBytes: peak === undefined ? undefined : Number(peak),
      exhausted: this.memoryKills() > 0,
    };
  }

  /** SIGKILLs every process in the group, until none is left (v2: the kernel's own `cgroup.kill`). */
  kill(): void {
    if (this.version === 2 && existsSync(path.join(this.place.memory, 'cgroup.kill'))) {
      writeIfPresent(path.join(this.place.memory, 'cgroup.kill'), '1');
      return;
    }
    for (let round = 0; round < 10; round++) {
      const pids = this.folders.flatMap(
        (folder) => readText(path.join(folder, 'cgroup.procs'))?.split('\n').filter(Boolean) ?? [],
      );
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    }
  }

  /** Removes the group; one whose last process is still exiting is tried again (about a second), then left to `close`. */
  async remove(): Promise<void> {
    for (const folder of this.folders) {
      for (let attempt = 0; attempt < REMOVE_TRIES && !removeGroup(folder); attempt++)
        await new Promise((resolve) => setTimeout(resolve, REMOVE_EVERY_MS));
    }
  }
}

/** v2 hands controllers down only from a cgroup with no process of its own: the processes move to a leaf first. */
function enableControllers(folder: string, controllers: string): void {
  const control = path.join(folder, 'cgroup.subtree_control');
  try {
    writeFileSync(control, controllers);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
    const leaf = path.join(folder, 'agentq-leaf');
    mkdirSync(leaf, { recursive: true });
    for (const pid of readText(path.join(folder, 'cgroup.procs'))?.split('\n').filter(Boolean) ?? []) {
      try {
        writeFileSync(path.join(leaf, 'cgroup.procs'), pid);
      } catch {
        // Exited meanwhile.
      }
    }
    writeFileSync(control, controllers);
  }
}

/** The folder, under a process's own cgroup, that all its agentq processes' tool runs share. */
const SHARED = 'agentq';

/** What all tool runs may hold together: a share of what `limitFile` allows (the machine's memory, at most). */
function sharedMemory(limitFile: string): number {
  const machine = Number(/^MemTotal:\s+(\d+) kB/m.exec(readText('/proc/meminfo') ?? '')?.[1] ?? 0) * 1024;
  const own = Number(readText(limitFile));
  const total = Number.isFinite(own) && own > 0 && (machine === 0 || own < machine) ? own : machine;
  return Math.floor((total * SHARED_MEMORY_SHARE) / 4096) * 4096;
}

/** Folders of processes that are gone (named by their pid), and their runs' groups: removed (a busy one stays). */
function removeLeftovers(parent: string): void {
  for (const entry of safeList(parent)) {
    const pid = /^(\d+)(?:-\d+)?$/.exec(entry)?.[1];
    if (!pid || alive(Number(pid))) continue;
    const folder = path.join(parent, entry);
    for (const run of safeList(folder)) removeGroup(path.join(folder, run));
    removeGroup(folder);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes a cgroup folder (rmdir: its files are the kernel's); false while it is busy (EBUSY: a process
 * still exiting), true once it is gone or cannot go for another reason (a group of its own inside).
 */
function removeGroup(folder: string): boolean {
  try {
    rmdirSync(folder);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'EBUSY';
  }
}

function safeList(folder: string): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function writeIfPresent(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A folder this process may make cgroups in: it exists and root can write it. */
function writable(folder: string): string | undefined {
  return existsSync(path.join(folder, 'cgroup.procs')) ? folder : undefined;
}

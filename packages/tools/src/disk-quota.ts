/**
 * A task's disk quota: what its work directory may hold (bytes on disk, as `du` counts them, and
 * entries), so that one task cannot fill the disk every task of its worker shares. The jail's file size
 * limit binds one file; this binds the folder. A filesystem's own quotas need the operator's setup (a
 * mount option, quota tools), so the folder is measured instead, and measured cheaply: a walk of it
 * (one `lstat` an entry) is needed only when the filesystem as a whole grew by more than the folder's
 * room since the last walk (one `statfs`), or when that walk is old (30 s, and ten times its own
 * duration); a walk that takes long is made at most a tenth of the time, and never holds the thread.
 *
 * While a process tool runs, its folder is looked at every 100 ms (`watchDisk`), and the process is
 * stopped once the folder is past its quota and still grows (a jailed run that starts past it may only
 * delete: jail-seccomp.ts): it can write past the quota for about one look's time. What its processes write to files they deleted
 * but keep open counts too, read when a walk finds less than the filesystem grew. File tools check
 * before they write (`WorkdirDisk`).
 */
import { closeSync, constants, opendirSync, openSync, statfsSync } from 'node:fs';
import { chmod, lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { openDeletedBytes } from './open-deleted-files.js';

export interface DiskUsage {
  /** Bytes allocated on disk (blocks: a sparse file counts what it uses, a hard link counts once). */
  bytes: number;
  /** Files, folders and links. */
  entries: number;
  /** Folders nest deeper than `MAX_WALK_DEPTH` levels: what is below them cannot be counted. */
  tooDeep?: boolean;
  /** Of `bytes`, those in files the run's processes deleted but hold open (open-deleted-files.ts). */
  openDeleted?: number;
}

/** A walk of a folder: what it held, when, how long the walk took, and how full its filesystem was then. */
export interface DiskLook {
  usage: DiskUsage;
  at: number;
  tookMs: number;
  filesystem: DiskUsage | undefined;
}

/** A work directory's quota, as a run is given it: plain data (a tool launcher is sent it too). */
export interface DiskQuota {
  dir: string;
  bytes: number;
  entries: number;
  /** The last walk of the folder, when there was one. */
  last?: DiskLook;
  /** The folder was past its quota when last measured: a jailed run may then only delete. */
  over?: boolean;
}

/** What a run left: the folder's usage (a walk's, or the last one's plus the filesystem's growth), and whether it was stopped. */
export interface DiskCheck {
  usage: DiskUsage;
  stopped: boolean;
  /** What the folder (and the files its processes held open) held when it was stopped. */
  stoppedAt?: DiskUsage;
  last: DiskLook | undefined;
}

/** At most this many entries in a work directory: each costs the disk an inode, and a walk an `lstat`. */
export const MAX_WORKDIR_ENTRIES = 200_000;

/** How often a running process's filesystem is looked at. */
const LOOK_EVERY_MS = 100;
/**
 * A walk is old once it is older than this many times its own duration, and than `STALE_MS`: a write
 * in this folder shows as the filesystem's growth, but a delete in another folder meanwhile can hide
 * it, so at most for this long.
 */
const WALK_SHARE = 10;
const STALE_MS = 30_000;

/** Past `limit`; a folder too deep to count is past it, unless the limit allows it (a run that started so may delete). */
export function overQuota(usage: DiskUsage, limit: DiskUsage): boolean {
  return (
    usage.bytes > limit.bytes || usage.entries > limit.entries || (usage.tooDeep === true && limit.tooDeep !== true)
  );
}

/** The larger of two usages, as a limit (a run may reach what its folder held before it). */
function atLeast(limit: DiskUsage, usage: DiskUsage): DiskUsage {
  return {
    bytes: Math.max(limit.bytes, usage.bytes),
    entries: Math.max(limit.entries, usage.entries),
    ...(usage.tooDeep ? { tooDeep: true } : {}),
  };
}

/**
 * The used bytes and inodes of the filesystem holding `dir` (undefined when it cannot say): one `statfs`,
 * made on this thread (a few µs, where a trip through the thread pool cost a tool call about 0.5 ms).
 */
function filesystemUsage(dir: string): DiskUsage | undefined {
  try {
    const fs = statfsSync(dir);
    return { bytes: (fs.blocks - fs.bfree) * fs.bsize, entries: fs.files - fs.ffree };
  } catch {
    return undefined;
  }
}

/** Entries stat'ed at once: the thread pool's threads all busy, and this process's loop free meanwhile. */
const STAT_BATCH = 256;

/**
 * Folders are walked by open descriptors (Node has no `openat`: a folder's entries are named through
 * `/proc/self/fd/N/`, which resolves no path above them), so a walk holds one descriptor a level; past
 * this depth, what is below cannot be counted.
 */
export const MAX_WALK_DEPTH = 512;

export const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Walks `dir` off this process's thread (about 25 µs an entry, the loop never held: the process that
 * walks runs other tasks' tools too); past `stopAbove` it stops, so its answer is then only known to be
 * past it. A missing folder holds nothing, and neither does an empty one, both told on this thread
 * (`holdsNothing`); an entry removed meanwhile is skipped.
 *
 * It never leaves the folder, whatever the task renames meanwhile: each folder is opened from its
 * parent's descriptor with O_NOFOLLOW and O_DIRECTORY, so a folder swapped for a link (a
 * `RENAME_EXCHANGE` racer) is not entered, and a folder's entries are named from its own descriptor,
 * never by a path the task could redirect above it.
 */
export async function walkDisk(dir: string, stopAbove?: DiskUsage): Promise<DiskLook> {
  const started = performance.now();
  const filesystem = filesystemUsage(dir);
  const usage: DiskUsage = { bytes: 0, entries: 0 };
  if (holdsNothing(dir)) return { usage, at: Date.now(), tookMs: performance.now() - started, filesystem };
  const linked = new Set<string>();
  const stack: Array<{ folder: FileHandle; pending: string[] }> = [];
  const enter = async (folder: FileHandle) => {
    stack.push({ folder, pending: [] });
    stack.at(-1)!.pending = await countFolder(folder, usage, linked, stopAbove);
  };
  try {
    // A folder that cannot be opened holds nothing countable: counted as empty.
    const top = await open(dir, FOLDER_FLAGS).catch(() => undefined);
    if (top) await enter(top);
    while (stack.length) {
      if (stopAbove && overQuota(usage, stopAbove)) break;
      const frame = stack.at(-1)!;
      const name = frame.pending.pop();
      if (name === undefined) {
        await stack.pop()!.folder.close();
        continue;
      }
      if (stack.length >= MAX_WALK_DEPTH) {
        usage.tooDeep = true;
        continue;
      }
      const child = await openFolder(frame.folder, name);
      if (child) await enter(child);
    }
  } finally {
    await Promise.all(stack.map((frame) => frame.folder.close()));
  }
  return { usage, at: Date.now(), tookMs: performance.now() - started, filesystem };
}

/**
 * A missing or empty folder (a task's before its first write), told on this thread with one read of its
 * entries, at most a few system calls: each trip of the walk through the thread pool waits for a turn
 * of a busy loop. False when it holds anything, or cannot be told so.
 */
function holdsNothing(dir: string): boolean {
  let fd: number;
  try {
    fd = openSync(dir, FOLDER_FLAGS);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  try {
    const entries = opendirSync(`/proc/self/fd/${fd}`, { bufferSize: 1 });
    try {
      return entries.readSync() === null;
    } finally {
      entries.closeSync();
    }
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Where an entry of an open folder is named without resolving any path above it. */
export function inFolder(folder: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${folder.fd}` : `/proc/self/fd/${folder.fd}/${name}`;
}

/** Linux's O_PATH (Node names no constant for it): a handle on an entry that needs no permission on it. */
const O_PATH = 0o10000000;

/** Opens a folder's subfolder; undefined when it is no longer one (removed, or swapped for a link or a file). */
export async function openFolder(parent: FileHandle, name: string): Promise<FileHandle | undefined> {
  try {
    return await open(inFolder(parent, name), FOLDER_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') return undefined;
  }
  // A folder its task closed (chmod 000) would hide what it holds: opened again, as its owner may (root
  // never meets this). Its mode is changed through a handle on that folder itself, never a link: the task
  // may swap the name for one to a file of the worker's between the two opens.
  let folder: FileHandle | undefined;
  try {
    folder = await open(inFolder(parent, name), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    await chmod(inFolder(folder), 0o700);
    // The handle's own name (/proc/self/fd/N) is a link to that very folder: followed, never a path's.
    return await open(inFolder(folder), constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    // Gone, swapped, or still closed to its owner: counted as empty, as any folder that cannot be opened.
    return undefined;
  } finally {
    await folder?.close();
  }
}

/** Counts a folder's entries into `usage`; the names of its subfolders. */
async function countFolder(
  folder: FileHandle,
  usage: DiskUsage,
  linked: Set<string>,
  stopAbove: DiskUsage | undefined,
): Promise<string[]> {
  const names = await readdir(inFolder(folder)).catch(() => [] as string[]);
  const subfolders: string[] = [];
  for (let from = 0; from < names.length; from += STAT_BATCH) {
    const batch = names.slice(from, from + STAT_BATCH);
    // A name gone since the listing holds nothing any more.
    const stats = await Promise.all(batch.map((name) => lstat(inFolder(folder, name)).catch(() => undefined)));
    for (const [index, entry] of stats.entries()) {
      if (entry && count(usage, linked, entry)) subfolders.push(batch[index]!);
    }
    if (stopAbove && overQuota(usage, stopAbove)) break;
  }
  return subfolders;
}

/** Adds an entry to `usage`; true when it is a folder to walk into. */
function count(
  usage: DiskUsage,
  linked: Set<string>,
  stats: { nlink: number; dev: number; ino: number; blocks: number; isDirectory(): boolean },
): boolean {
  usage.entries++;
  const folder = stats.isDirectory();
  if (stats.nlink > 1 && !folder) {
    const inode = `${stats.dev}:${stats.ino}`;
    if (linked.has(inode)) return false;
    linked.add(inode);
  }
  usage.bytes += stats.blocks * 512;
  return folder;
}

/** A walk this quick is always made again when needed. */
const QUICK_WALK_MS = 50;

/** A long walk is recent: another now would take more than a tenth of the time. */
function recent(last: DiskLook | undefined): last is DiskLook {
  return last !== undefined && last.tookMs >= QUICK_WALK_MS && Date.now() - last.at < WALK_SHARE * last.tookMs;
}

/**
 * What the folder holds at most, from its last walk and how much its filesystem grew since (other
 * folders' writes count too, so it only errs high), and whether that fits `limit`; undefined when it
 * cannot be told without a walk (none yet, or an old one).
 */
function estimate(
  quota: DiskQuota,
  limit: DiskUsage,
): { usage: DiskUsage; fits: boolean; shrank: boolean } | undefined {
  const { last } = quota;
  if (!last?.filesystem || Date.now() - last.at >= Math.max(WALK_SHARE * last.tookMs, STALE_MS)) return undefined;
  const now = filesystemUsage(quota.dir);
  if (!now) return undefined;
  const usage = {
    ...last.usage,
    bytes: last.usage.bytes + Math.max(0, now.bytes - last.filesystem.bytes),
    entries: last.usage.entries + Math.max(0, now.entries - last.filesystem.entries),
  };
  // Something was deleted since (here, maybe): the estimate can only err high, so a walk may show less.
  return {
    usage,
    fits: !overQuota(usage, limit),
    shrank: now.bytes < last.filesystem.bytes || now.entries < last.filesystem.entries,
  };
}

/**
 * Watches the folder while a process runs: `onOver` is called (once) when it is past its quota and
 * past what it held when the run started (a run that starts past it may delete). Walks take at most a
 * tenth of the time, so a folder that takes long to walk is looked at less often. `stop` ends the watch
 * and answers the folder's usage then (the same answer to every later call); `cancel` only ends it.
 */
export function watchDisk(
  quota: DiskQuota,
  onOver: (usage: DiskUsage) => void,
  pid?: number,
): { stop(): Promise<DiskCheck>; cancel(): void } {
  const limit = { bytes: quota.bytes, entries: quota.entries };
  let state: DiskQuota = { ...quota };
  // What the run may reach: its quota, or what the folder held before it, if more.
  let allowed = quota.last ? atLeast(limit, quota.last.usage) : undefined;
  let stoppedAt: DiskUsage | undefined;
  let looking: Promise<void> | undefined;
  const look = async () => {
    const known = estimate(state, allowed ?? limit);
    if (known?.fits || (recent(state.last) && !known?.shrank) || timer === undefined) return;
    const walked = await walkDisk(quota.dir, allowed);
    state = { ...state, last: walked };
    // The filesystem grew past the room, but maybe not in the folder: in files the run deleted and holds open.
    const openDeleted =
      pid === undefined || overQuota(walked.usage, allowed ?? limit) ? 0 : await openDeletedBytes(pid);
    const usage = openDeleted
      ? { ...walked.usage, bytes: walked.usage.bytes + openDeleted, openDeleted }
      : walked.usage;
    if (!allowed) {
      allowed = atLeast(limit, usage);
    } else if (overQuota(usage, allowed) && timer !== undefined) {
      stoppedAt = usage;
      clearInterval(timer);
      onOver(usage);
    }
  };
  let timer: NodeJS.Timeout | undefined = setInterval(() => {
    // A look that fails (a walk the system refused) is made again at the next tick, and the run's end walks
    // again: never an unhandled rejection, which would end the worker.
    looking ??= look()
      .catch(() => undefined)
      .finally(() => (looking = undefined));
  }, LOOK_EVERY_MS);
  const cancel = () => {
    clearInterval(timer);
    timer = undefined;
  };
  let check: Promise<DiskCheck> | undefined;
  const final = async (): Promise<DiskCheck> => {
    cancel();
    await looking;
    const known = estimate(state, limit);
    // Fits, or was walked a moment ago and nothing was deleted since: no walk (a large folder past its
    // quota would otherwise be walked after every run).
    const stopped = { stopped: stoppedAt !== undefined, ...(stoppedAt ? { stoppedAt } : {}) };
    if (known && (known.fits || (recent(state.last) && !known.shrank)))
      return { usage: known.usage, ...stopped, last: state.last };
    const walked = await walkDisk(quota.dir, { bytes: Number.MAX_SAFE_INTEGER, entries: MAX_WORKDIR_ENTRIES });
    return { usage: walked.usage, ...stopped, last: walked };
  };
  return { stop: () => (check ??= final()), cancel };
}

/** "3.2 MiB", "12.0 KiB", "800 bytes" */
export function megabytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The quota's words for the model: what the folder holds, against what it may. */
export function quotaText(usage: DiskUsage, quota: DiskUsage): string {
  if (usage.openDeleted) {
    return `the work directory's processes hold ${megabytes(usage.openDeleted)} in files they deleted but keep open (their disk is freed only when closed; the quota is ${megabytes(quota.bytes)}): close them, or write to files you keep`;
  }
  if (usage.tooDeep)
    return `the work directory's folders nest too deep to be measured (more than ${MAX_WALK_DEPTH} levels; its quota is ${megabytes(quota.bytes)}): remove the deepest (rm -r)`;
  return `the work directory holds ${megabytes(usage.bytes)} in ${usage.entries} ${usage.entries === 1 ? 'entry' : 'entries'}; its quota is ${megabytes(quota.bytes)} and ${quota.entries} entries`;
}

/**
 * A run's view of its folder's quota, for its tools: the last walk (from a process tool's run or a
 * file tool's check), and the checks a file tool makes before it writes.
 */
export class WorkdirDisk {
  private last: DiskLook | undefined;
  /** The best known usage: the last run's, or a walk's, plus what file tools wrote since. */
  private known: DiskUsage | undefined;

  constructor(
    readonly dir: string,
    readonly limit: DiskUsage,
  ) {}

  /** What the folder holds, as best known (undefined before anything measured it). */
  usage(): DiskUsage | undefined {
    return this.known;
  }

  /** The quota a process run is given. */
  quota(): DiskQuota {
    const over = this.known !== undefined && overQuota(this.known, this.limit);
    return { dir: this.dir, ...this.limit, ...(this.last ? { last: this.last } : {}), ...(over ? { over } : {}) };
  }

  /** What a process run left. */
  record(check: DiskCheck | undefined): void {
    if (!check) return;
    this.last = check.last;
    this.known = check.usage;
  }

  /**
   * Before a file tool writes `bytes` more (and maybe one more entry): a refusal for the model when
   * that would take the folder past its quota, else undefined (and the write is counted).
   */
  async admit(bytes: number): Promise<string | undefined> {
    const limit = { bytes: this.limit.bytes - bytes, entries: this.limit.entries - 1 };
    // Walked again to be sure: what is known may err high (a run's estimate, after a delete).
    if (!this.known || overQuota(this.known, limit)) {
      this.last = await walkDisk(this.dir, { bytes: Number.MAX_SAFE_INTEGER, entries: MAX_WORKDIR_ENTRIES });
      this.known = this.last.usage;
    }
    if (overQuota(this.known, limit)) {
      return `Not written: ${quotaText(this.known, this.limit)}, and ${megabytes(bytes)} more would pass it. Delete what you no longer need (with bash: rm), then write again.`;
    }
    this.known = { bytes: this.known.bytes + bytes, entries: this.known.entries + 1 };
    return undefined;
  }
}

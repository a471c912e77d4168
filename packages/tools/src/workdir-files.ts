/**
 * File access for the file tools, which run in the worker (outside any jail): every path the model
 * gives stays inside the task's work directory, whatever links the task's own code planted there.
 *
 * - Every component is resolved by hand: a link (dangling or not, relative or absolute) is followed
 *   only while it stays inside; `..` may not climb above the work directory.
 * - The file is opened relative to its folder's open descriptor, never by path again, and the folder
 *   is checked by that descriptor: a link swapped in after the check cannot redirect the open.
 * - The last component is opened with O_NOFOLLOW, and a file with more than one name (a hard link,
 *   whose other name may be outside) is refused.
 *
 * These checks and opens are system calls on the task's own folder, of microseconds each, and are made
 * on the loop's thread: through libuv's threads each cost a round trip between threads longer than the
 * call (a write_file's twelve took 2 ms of an idle worker, against 0.5 ms). Contents over 1 MiB are
 * read and written through libuv's threads, so that they do not hold the loop.
 */
import {
  chownSync,
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  read,
  readlinkSync,
  readSync,
  realpathSync,
  write,
  writeSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ToolError } from './errors.js';
import type { HostIdentity } from './jail-identity.js';

/** Links followed in one path before it is refused (the kernel's own limit). */
const MAX_LINKS = 40;
/** Linux names an open descriptor's file here; elsewhere the checks fall back to paths. */
const FD_PATHS = process.platform === 'linux';
/** Contents up to this size are read and written on the loop's thread (a few hundred microseconds at most). */
const AT_ONCE_BYTES = 1024 * 1024;
const readAsync = promisify(read);
const writeAsync = promisify(write);

/**
 * The real path a model's path names inside the work directory (links followed, each kept inside).
 * @example await resolveInWorkdir({ workdir: '/data/work/t1', path: 'src/a.py' }) // '/data/work/t1/src/a.py'
 */
// async: a refused path is a rejection, as for the opens.
export async function resolveInWorkdir(options: { workdir: string; path: string }): Promise<string> {
  return resolvePath(realpathSync(options.workdir), options.path);
}

/**
 * What a model's path names, relative to the work directory, as the file tools would open it now:
 * `./`, `//` and `..` read, links inside followed; a folder not made yet (nor the work directory) is read
 * as written. Throws the file tools' refusal for a path outside. Approval rules read this, not the
 * spelling.
 * @example workdirPathOf({ workdir: '/data/work/t1', path: 'x/../deploy//a' }) // { path: 'deploy/a', isFolder: false }
 */
export function workdirPathOf(options: { workdir: string; path: string }): { path: string; isFolder: boolean } {
  let root: string;
  try {
    root = realpathSync(options.workdir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    root = path.resolve(options.workdir);
  }
  const target = resolvePath(root, options.path);
  return { path: path.relative(root, target) || '.', isFolder: lstatOrMissing(target)?.isDirectory() === true };
}

function resolvePath(root: string, requested: string): string {
  const refuse = () => outside(requested);
  if (requested.includes('\0')) throw refuse();
  const pending = partsOf(root, requested);
  if (!pending) throw refuse();
  let current = root;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (current === root) throw refuse();
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    const target = linkTarget(next);
    if (target === undefined) {
      current = next;
      continue;
    }
    if (++links > MAX_LINKS)
      throw new ToolError('path_outside_workdir', `Refused: "${requested}" goes through more than ${MAX_LINKS} links.`);
    const targetParts = partsOf(root, target);
    if (!targetParts) throw refuse();
    // A relative link continues from the folder that holds it; an absolute one from the root.
    if (path.isAbsolute(target)) current = root;
    pending.unshift(...targetParts);
  }
  return current;
}

/**
 * Where a link points, or undefined when `at` is no link (or nothing is there). One system call: a
 * task renaming a file over a link between an lstat and a readlink made the readlink fail (EINVAL).
 * What is not a link now is read as not one; the open after checks whatever is there then.
 */
function linkTarget(at: string): string | undefined {
  try {
    return readlinkSync(at);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EINVAL' || code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** A path's lstat, or undefined when nothing (or no folder on the way) is there. */
function lstatOrMissing(at: string): Stats | undefined {
  try {
    return lstatSync(at);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

export type WorkdirAccess = 'read' | 'write' | 'update';

/**
 * Opens a file of the work directory: `read`, `update` (read and write an existing file), or `write`
 * (created when missing, with its folders; give `owner` so the jailed tools, which run as it, can
 * change what the file tools made). Answers the file's descriptor, which the caller closes
 * (`closeSync`).
 */
// async: a refusal is a rejection.
export async function openInWorkdir(options: {
  workdir: string;
  path: string;
  access: WorkdirAccess;
  owner?: HostIdentity;
}): Promise<number> {
  const root = realpathSync(options.workdir);
  return openAt(root, resolvePath(root, options.path), options);
}

/**
 * Opens a path `resolveInWorkdir` answered, without trusting that it still leads where it did: the
 * folder is opened and checked by its descriptor, and the file opened inside that very folder.
 * `path` is the model's, for messages. Answers the file's descriptor.
 */
// async: a refusal is a rejection.
export async function openResolved(options: {
  workdir: string;
  target: string;
  path: string;
  access: WorkdirAccess;
  owner?: HostIdentity;
}): Promise<number> {
  return openAt(realpathSync(options.workdir), options.target, options);
}

function openAt(
  root: string,
  target: string,
  options: { path: string; access: WorkdirAccess; owner?: HostIdentity },
): number {
  if (target === root)
    throw new ToolError('invalid_arguments', `"${options.path}" is the work directory itself, not a file.`);
  if (options.access === 'write') makeFolders(root, path.dirname(target), options);
  let folder: number;
  try {
    folder = openSync(path.dirname(target), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === 'ELOOP' ? outside(options.path) : error;
  }
  try {
    checkInside(root, folder, options.path);
    const name = path.basename(target);
    const at = FD_PATHS ? `/proc/self/fd/${folder}/${name}` : target;
    // O_NONBLOCK: a FIFO the task planted must not hang the worker in open(); regular files ignore it.
    const flags =
      { read: constants.O_RDONLY, update: constants.O_RDWR, write: constants.O_WRONLY | constants.O_CREAT }[
        options.access
      ] |
      constants.O_NOFOLLOW |
      constants.O_NONBLOCK;
    let created = false;
    let file: number;
    try {
      if (options.access === 'write') {
        try {
          file = openSync(at, flags | constants.O_EXCL, 0o644);
          created = true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          file = openSync(at, flags);
        }
      } else {
        file = openSync(at, flags);
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // O_NOFOLLOW: a link was put in place of the file after the path was resolved.
      if (code === 'ELOOP') throw outside(options.path);
      // A FIFO without a reader, or a socket.
      if (code === 'ENXIO') throw notRegular(options.path);
      throw error;
    }
    try {
      const stats = fstatSync(file);
      if (stats.isDirectory()) throw Object.assign(new Error(`${options.path} is a folder`), { code: 'EISDIR' });
      if (!stats.isFile()) throw notRegular(options.path);
      if (stats.nlink > 1) {
        throw new ToolError(
          'path_outside_workdir',
          `Refused: "${options.path}" is a hard link (it has ${stats.nlink} names, and another may be outside the work directory). Make a copy with bash and use that.`,
        );
      }
      if (created && options.owner) fchownSync(file, options.owner.uid, options.owner.gid);
      return file;
    } catch (error) {
      closeSync(file);
      throw error;
    }
  } finally {
    closeSync(folder);
  }
}

/** Reads a whole text file of the work directory, refusing one larger than `maxBytes`. */
export async function readWorkdirFile(options: { workdir: string; path: string; maxBytes: number }): Promise<string> {
  const file = await openInWorkdir({ ...options, access: 'read' });
  try {
    const { size } = fstatSync(file);
    if (size > options.maxBytes) {
      throw new ToolError(
        'file_too_large',
        `"${options.path}" is ${size} bytes, more than the ${options.maxBytes} the file tools read at once. Read parts of it with bash (head, tail, sed -n '100,200p').`,
      );
    }
    return (await readContent(file, options.maxBytes)).toString('utf8');
  } finally {
    closeSync(file);
  }
}

/** Writes a whole file of the work directory (created with its folders when missing). */
export async function writeWorkdirFile(options: {
  workdir: string;
  path: string;
  content: string;
  owner?: HostIdentity;
}): Promise<void> {
  const file = await openInWorkdir({ ...options, access: 'write' });
  try {
    await replaceContent(file, options.content);
  } finally {
    closeSync(file);
  }
}

/**
 * Replaces everything an open file holds (by position, whatever was read from it before). Written
 * first, then cut to its length: cutting a file to nothing first frees its blocks only for the write to
 * take them again (0.4 ms for a small file here).
 */
export async function replaceContent(file: number, content: string | Uint8Array): Promise<void> {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  for (let written = 0; written < bytes.length;) {
    const left = bytes.length - written;
    written +=
      bytes.length <= AT_ONCE_BYTES
        ? writeSync(file, bytes, written, left, written)
        : (await writeAsync(file, bytes, written, left, written)).bytesWritten;
  }
  ftruncateSync(file, bytes.length);
}

/** What an open file holds, read from its start: at most `maxBytes` (it may grow while read). */
export async function readContent(file: number, maxBytes: number): Promise<Buffer> {
  const size = Math.min(fstatSync(file).size, maxBytes);
  const buffer = Buffer.alloc(size);
  let filled = 0;
  while (filled < size) {
    const left = size - filled;
    const read =
      size <= AT_ONCE_BYTES
        ? readSync(file, buffer, filled, left, filled)
        : (await readAsync(file, buffer, filled, left, filled)).bytesRead;
    // The file was cut short while it was read.
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

/** Creates the missing folders down to `folder`, one at a time, each checked to be a real folder inside. */
function makeFolders(root: string, folder: string, options: { path: string; owner?: HostIdentity }): void {
  const missing: string[] = [];
  for (let current = folder; current !== root; current = path.dirname(current)) {
    const stats = lstatOrMissing(current);
    if (stats?.isDirectory()) break;
    // A link here appeared after the path was resolved (which follows links): never go through it.
    if (stats?.isSymbolicLink()) throw outside(options.path);
    if (stats)
      throw new ToolError(
        'invalid_arguments',
        `"${path.relative(root, current)}" is a file, not a folder: "${options.path}" cannot be written under it.`,
      );
    missing.unshift(current);
  }
  for (const created of missing) {
    try {
      mkdirSync(created);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    // Something else may have put a link here since: it must be the folder just made.
    if (!lstatSync(created).isDirectory()) throw outside(options.path);
    if (options.owner) chownSync(created, options.owner.uid, options.owner.gid);
  }
}

/** Checks by its descriptor that an open folder is the work directory or inside it. */
function checkInside(root: string, folder: number, requested: string): void {
  if (!FD_PATHS) return;
  const real = readlinkSync(`/proc/self/fd/${folder}`);
  if (real !== root && !real.startsWith(`${root}${path.sep}`)) throw outside(requested);
}

/** A path's components relative to the root, or undefined for an absolute path outside it. */
function partsOf(root: string, requested: string): string[] | undefined {
  if (!path.isAbsolute(requested)) return requested.split('/');
  if (requested === root) return [];
  if (!requested.startsWith(`${root}/`)) return undefined;
  return requested.slice(root.length + 1).split('/');
}

function notRegular(requested: string): ToolError {
  return new ToolError(
    'invalid_arguments',
    `"${requested}" is not a regular file (a device, socket or pipe); file tools only handle regular files.`,
  );
}

function outside(requested: string): ToolError {
  return new ToolError(
    'path_outside_workdir',
    `Refused: "${requested}" is outside the task's work directory. Use a relative path such as "notes/result.txt"; files may only be read and written inside the work directory, and links that lead out are not followed.`,
  );
}

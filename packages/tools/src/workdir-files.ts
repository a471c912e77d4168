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
 */
import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './errors.js';
import type { HostIdentity } from './jail-identity.js';

/** Links followed in one path before it is refused (the kernel's own limit). */
const MAX_LINKS = 40;
/** Linux names an open descriptor's file here; elsewhere the checks fall back to paths. */
const FD_PATHS = process.platform === 'linux';

/**
 * The real path a model's path names inside the work directory (links followed, each kept inside).
 * @example await resolveInWorkdir({ workdir: '/data/work/t1', path: 'src/a.py' }) // '/data/work/t1/src/a.py'
 */
export async function resolveInWorkdir(options: { workdir: string; path: string }): Promise<string> {
  const root = await realpath(options.workdir);
  const refuse = () => outside(options.path);
  if (options.path.includes('\0')) throw refuse();
  const pending = partsOf(root, options.path);
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
    const stats = await lstat(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined;
      throw error;
    });
    if (!stats?.isSymbolicLink()) {
      current = next;
      continue;
    }
    if (++links > MAX_LINKS)
      throw new ToolError(
        'path_outside_workdir',
        `Refused: "${options.path}" goes through more than ${MAX_LINKS} links.`,
      );
    const target = await readlink(next);
    const targetParts = partsOf(root, target);
    if (!targetParts) throw refuse();
    // A relative link continues from the folder that holds it; an absolute one from the root.
    if (path.isAbsolute(target)) current = root;
    pending.unshift(...targetParts);
  }
  return current;
}

export type WorkdirAccess = 'read' | 'write' | 'update';

/**
 * Opens a file of the work directory: `read`, `update` (read and write an existing file), or `write`
 * (created when missing, with its folders; give `owner` so the jailed tools, which run as it, can
 * change what the file tools made). The caller closes the handle.
 */
export async function openInWorkdir(options: {
  workdir: string;
  path: string;
  access: WorkdirAccess;
  owner?: HostIdentity;
}): Promise<FileHandle> {
  return openResolved({ ...options, target: await resolveInWorkdir(options) });
}

/**
 * Opens a path `resolveInWorkdir` answered, without trusting that it still leads where it did: the
 * folder is opened and checked by its descriptor, and the file opened inside that very folder.
 * `path` is the model's, for messages.
 */
export async function openResolved(options: {
  workdir: string;
  target: string;
  path: string;
  access: WorkdirAccess;
  owner?: HostIdentity;
}): Promise<FileHandle> {
  const root = await realpath(options.workdir);
  const { target } = options;
  if (target === root)
    throw new ToolError('invalid_arguments', `"${options.path}" is the work directory itself, not a file.`);
  if (options.access === 'write') await makeFolders(root, path.dirname(target), options);
  const folder = await open(
    path.dirname(target),
    constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
  ).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ELOOP' ? outside(options.path) : error;
  });
  try {
    await checkInside(root, folder, options.path);
    const name = path.basename(target);
    const at = FD_PATHS ? `/proc/self/fd/${folder.fd}/${name}` : target;
    // O_NONBLOCK: a FIFO the task planted must not hang the worker in open(); regular files ignore it.
    const flags =
      { read: constants.O_RDONLY, update: constants.O_RDWR, write: constants.O_WRONLY | constants.O_CREAT }[
        options.access
      ] |
      constants.O_NOFOLLOW |
      constants.O_NONBLOCK;
    let created = false;
    let file: FileHandle;
    try {
      if (options.access === 'write') {
        file = await open(at, flags | constants.O_EXCL, 0o644).then(
          (handle) => ((created = true), handle),
          (error: NodeJS.ErrnoException) => (error.code === 'EEXIST' ? open(at, flags) : Promise.reject(error)),
        );
      } else {
        file = await open(at, flags);
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
      const stats = await file.stat();
      if (stats.isDirectory()) throw Object.assign(new Error(`${options.path} is a folder`), { code: 'EISDIR' });
      if (!stats.isFile()) throw notRegular(options.path);
      if (stats.nlink > 1) {
        throw new ToolError(
          'path_outside_workdir',
          `Refused: "${options.path}" is a hard link (it has ${stats.nlink} names, and another may be outside the work directory). Make a copy with bash and use that.`,
        );
      }
      if (created && options.owner) await file.chown(options.owner.uid, options.owner.gid);
      return file;
    } catch (error) {
      await file.close();
      throw error;
    }
  } finally {
    await folder.close();
  }
}

/** Reads a whole text file of the work directory, refusing one larger than `maxBytes`. */
export async function readWorkdirFile(options: { workdir: string; path: string; maxBytes: number }): Promise<string> {
  const file = await openInWorkdir({ ...options, access: 'read' });
  try {
    const { size } = await file.stat();
    if (size > options.maxBytes) {
      throw new ToolError(
        'file_too_large',
        `"${options.path}" is ${size} bytes, more than the ${options.maxBytes} the file tools read at once. Read parts of it with bash (head, tail, sed -n '100,200p').`,
      );
    }
    return await file.readFile('utf8');
  } finally {
    await file.close();
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
    await file.close();
  }
}

/** Replaces everything an open file holds (by position, whatever was read from it before). */
export async function replaceContent(file: FileHandle, content: string): Promise<void> {
  const bytes = Buffer.from(content);
  await file.truncate(0);
  for (let written = 0; written < bytes.length;) {
    written += (await file.write(bytes, written, bytes.length - written, written)).bytesWritten;
  }
}

/** Creates the missing folders down to `folder`, one at a time, each checked to be a real folder inside. */
async function makeFolders(
  root: string,
  folder: string,
  options: { path: string; owner?: HostIdentity },
): Promise<void> {
  const missing: string[] = [];
  for (let current = folder; current !== root; current = path.dirname(current)) {
    const stats = await lstat(current).catch(() => undefined);
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
    await mkdir(created).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    // Something else may have put a link here since: it must be the folder just made.
    if (!(await lstat(created)).isDirectory()) throw outside(options.path);
    if (options.owner) await chown(created, options.owner.uid, options.owner.gid);
  }
}

/** Checks by its descriptor that an open folder is the work directory or inside it. */
async function checkInside(root: string, folder: FileHandle, requested: string): Promise<void> {
  if (!FD_PATHS) return;
  const real = await readlink(`/proc/self/fd/${folder.fd}`);
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

/**
 * A task's folder read from outside, for its owner (the API's files routes): what it holds, and all of
 * it as a .tar.gz. Walked the way the disk quota walks it (disk-quota.ts): each folder opened from its
 * parent's descriptor with O_NOFOLLOW, each entry named from its folder's descriptor, so what a task
 * renames or links meanwhile never leads outside. Only folders and regular files with one name are
 * shown: a link (which may point anywhere), a hard link (whose other name may be outside), a FIFO or a
 * device is left out.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { pack } from 'tar-stream';
import { FOLDER_FLAGS, inFolder, MAX_WALK_DEPTH, openFolder } from './disk-quota.js';
import { shownFileTime, tarFileTime } from './file-times.js';

/** A file of a task's folder as listed. */
export interface WorkdirFile {
  path: string;
  size: number;
  /** RFC 3339; a time a task set past years 1 to 9999 as the nearest of them (file-times.ts). */
  modifiedAt: string;
}

/** What a walk meets: a folder (entered) or a regular file, with its path from the top. */
type Visit = (entry: { path: string; stats: Stats; folder: FileHandle; name: string }) => Promise<void> | void;

/**
 * Visits every folder and shown file under `dir` (folders before what they hold); stops once `visit`
 * answered that it has had enough (`stop()`). A missing `dir` holds nothing.
 */
async function walk(dir: string, visit: Visit, stop: () => boolean): Promise<boolean> {
  const top = await open(dir, FOLDER_FLAGS).catch((error: NodeJS.ErrnoException) => {
    // Missing: nothing there. Not readable by this process: said, not shown as empty.
    if (error.code === 'EACCES' || error.code === 'EPERM') throw error;
    return undefined;
  });
  if (!top) return false;
  const stack: Array<{ folder: FileHandle; prefix: string }> = [{ folder: top, prefix: '' }];
  try {
    while (stack.length && !stop()) {
      const { folder, prefix } = stack.pop()!;
      try {
        const names = (await readdir(inFolder(folder)).catch(() => [] as string[])).sort();
        for (const name of names) {
          if (stop()) break;
          // A name gone since the listing is left out of the archive.
          const stats = await lstat(inFolder(folder, name)).catch(() => undefined);
          const path = `${prefix}${name}`;
          if (stats?.isDirectory()) {
            await visit({ path, stats, folder, name });
            if (path.split('/').length >= MAX_WALK_DEPTH) continue;
            const child = await openFolder(folder, name);
            if (child) stack.push({ folder: child, prefix: `${path}/` });
          } else if (stats?.isFile() && stats.nlink === 1) {
            await visit({ path, stats, folder, name });
          }
        }
      } finally {
        await folder.close();
      }
    }
  } finally {
    await Promise.all(stack.map((frame) => frame.folder.close()));
  }
  return true;
}

/** The files of a task's folder (at most `maxFiles`; `truncated` when there were more), by path. */
export async function listWorkdir(
  dir: string,
  maxFiles = 10_000,
): Promise<{ exists: boolean; files: WorkdirFile[]; truncated: boolean }> {
  const files: WorkdirFile[] = [];
  let truncated = false;
  const exists = await walk(
    dir,
    ({ path, stats }) => {
      if (!stats.isFile()) return;
      if (files.length === maxFiles) truncated = true;
      else files.push({ path, size: stats.size, modifiedAt: shownFileTime(stats.mtimeMs) });
    },
    () => truncated,
  );
  return { exists, files: files.sort((a, b) => a.path.localeCompare(b.path)), truncated };
}

/**
 * Writes a task's folder as a gzipped tar to `output` (folders and regular files; modes 755 and 644,
 * owned by nobody in particular, each time as it is: file-times.ts). A file is archived at the size it
 * had when opened, whatever the task does to it meanwhile (`sized`): the archive is always whole.
 */
export async function archiveWorkdir(dir: string, output: NodeJS.WritableStream): Promise<void> {
  const archive = pack();
  const written = pipeline(archive, createGzip(), output);
  // A reader that goes away (a cancelled download) fails `written` while the walk is still under way:
  // handled here, said when it is awaited below.
  written.catch(() => undefined);
  try {
    await walk(
      dir,
      async ({ path, stats, folder, name }) => {
        if (stats.isDirectory()) {
          archive.entry({ name: path, type: 'directory', mode: 0o755, ...tarFileTime(stats.mtimeMs) });
          return;
        }
        // A file gone or swapped for something that cannot be opened as a file is left out of the archive.
        const file = await open(
          inFolder(folder, name),
          constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        ).catch(() => undefined);
        if (!file) return;
        try {
          // What was opened is checked, not what was listed: it may have been swapped since.
          const opened = await file.stat();
          if (!opened.isFile() || opened.nlink !== 1) return;
          const header = { name: path, size: opened.size, mode: 0o644, ...tarFileTime(opened.mtimeMs) };
          if (opened.size === 0) archive.entry(header, Buffer.alloc(0));
          else
            await pipeline(
              sized(file.createReadStream({ start: 0, end: opened.size - 1, autoClose: false }), opened.size),
              archive.entry(header),
            );
        } finally {
          await file.close();
        }
      },
      () => false,
    );
    archive.finalize();
  } catch (error) {
    archive.destroy(error as Error);
  }
  await written;
}

/** Zeros for a file cut short while archived. */
const PADDING = Buffer.alloc(64 * 1024);

/**
 * A file's bytes, exactly `size` of them (what its header says): a file that grew while read was read
 * to `size` only (its stream's `end`); one a running task cut short meanwhile is padded with zeros, as
 * GNU tar does, since a tar entry shorter than its header would end the archive there.
 */
async function* sized(chunks: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let read = 0;
  for await (const chunk of chunks) {
    read += chunk.length;
    yield chunk;
  }
  for (; read < size; read += PADDING.length) yield PADDING.subarray(0, Math.min(PADDING.length, size - read));
}

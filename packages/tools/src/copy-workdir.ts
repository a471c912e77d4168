/**
 * A fork's work directory starts as a copy of its source's: the files the kept steps wrote. It holds on
 * disk what its source held, no more: a hard link stays one file with two names, a sparse file keeps its
 * holes (GNU `cp -a --sparse=always`; Node's `cp` wrote each link as a whole file and filled the holes:
 * 201 MB became 3 GB). A source past the fork's quota is not copied at all. The copy never follows a link
 * (a link is copied as the link it is, and the jail resolves it inside the new folder only), leaves out
 * what is not a file, folder or link (fifos, sockets, devices), and is owned by the user the fork's tools
 * run as. Only an ended task's folder is copied: nothing of it runs any more, so nothing can swap a
 * folder for a link while it is read.
 */
import { execFile } from 'node:child_process';
import { lchown, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { megabytes, overQuota, walkDisk, type DiskUsage } from './disk-quota.js';
import { ToolError } from './errors.js';

const run = promisify(execFile);

/** The copy would pass the fork's quota: its message says what the source holds and what the fork may. */
export class WorkdirTooLargeError extends ToolError {
  constructor(
    readonly usage: DiskUsage,
    readonly quota: DiskUsage,
  ) {
    super(
      'tool_unavailable',
      `the source's work directory holds ${megabytes(usage.bytes)} in ${usage.entries} entries, past the fork's quota (${megabytes(quota.bytes)} and ${quota.entries} entries): it was not copied`,
    );
  }
}

export async function copyWorkdir(options: {
  from: string;
  to: string;
  owner?: { uid: number; gid: number } | undefined;
  quota?: DiskUsage;
}): Promise<void> {
  const { from, to, owner, quota } = options;
  if (quota) {
    const { usage } = await walkDisk(from, quota);
    if (overQuota(usage, quota)) throw new WorkdirTooLargeError(usage, quota);
  }
  // --no-target-directory: `to` is the copy itself, never a folder to copy into.
  await run('cp', ['-a', '--sparse=always', '--no-target-directory', '--', from, to]);
  await tidyTree(to, owner);
}

/** Removes what is not a file, folder or link, and gives every entry (links themselves) to `owner`. */
async function tidyTree(root: string, owner: { uid: number; gid: number } | undefined): Promise<void> {
  const folders = [root];
  while (folders.length) {
    const folder = folders.pop()!;
    if (owner) await lchown(folder, owner.uid, owner.gid);
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const entryPath = path.join(folder, entry.name);
      if (entry.isDirectory()) folders.push(entryPath);
      else if (!entry.isFile() && !entry.isSymbolicLink()) await rm(entryPath, { force: true });
      else if (owner) await lchown(entryPath, owner.uid, owner.gid);
    }
  }
}

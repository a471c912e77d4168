/**
 * A fork's work directory starts as a copy of its source's: the files the kept steps wrote. The copy
 * never follows a link (a link is copied as the link it is, and the jail resolves it inside the new
 * folder only), leaves out what is not a file, folder or link (fifos, sockets), and is owned by the
 * user the fork's tools run as. Only an ended task's folder is copied: nothing of it runs any more,
 * so nothing can swap a folder for a link while it is read.
 */
import { lstat, lchown, readdir, cp } from 'node:fs/promises';
import path from 'node:path';

export async function copyWorkdir(from: string, to: string, owner?: { uid: number; gid: number }): Promise<void> {
  await cp(from, to, {
    recursive: true,
    verbatimSymlinks: true,
    dereference: false,
    errorOnExist: false,
    force: false,
    preserveTimestamps: true,
    filter: async (source) => {
      const stats = await lstat(source);
      return stats.isFile() || stats.isDirectory() || stats.isSymbolicLink();
    },
  });
  if (owner) await chownTree(to, owner);
}

/** Every entry of the tree, links themselves (never what they point to), given to `owner`. */
async function chownTree(root: string, owner: { uid: number; gid: number }): Promise<void> {
  const folders = [root];
  while (folders.length) {
    const folder = folders.pop()!;
    await lchown(folder, owner.uid, owner.gid);
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const entryPath = path.join(folder, entry.name);
      if (entry.isDirectory()) folders.push(entryPath);
      else await lchown(entryPath, owner.uid, owner.gid);
    }
  }
}

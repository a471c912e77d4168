/**
 * The disk a process tree holds in files it deleted but keeps open: no walk of a folder sees them, yet
 * they fill the disk until closed (`exec 3>f; rm f`, then write to descriptor 3). Read from Linux's
 * /proc: the tree's processes (by parent), each one's descriptors that name a deleted file, and that
 * file's blocks, a file open several times counted once. A jailed tree is all below its bubblewrap
 * (a process that leaves its session is still its namespace's child). 0 where /proc cannot tell.
 */
import { readdir, readFile, readlink, stat } from 'node:fs/promises';

/** The processes below `root` (itself included), by their parent in /proc/<pid>/stat. */
async function processTree(root: number): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const children = new Map<number, number[]>();
  await Promise.all(
    pids.map(async (pid) => {
      const line = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      // "pid (name) state ppid ...": the name may hold spaces and parentheses, so read after its last ')'.
      const parent = Number(line.slice(line.lastIndexOf(')') + 2).split(' ')[1]);
      if (!Number.isNaN(parent)) children.set(parent, [...(children.get(parent) ?? []), pid]);
    }),
  );
  const tree = [root];
  for (let index = 0; index < tree.length; index++) tree.push(...(children.get(tree[index]!) ?? []));
  return tree;
}

/** Bytes on disk of the deleted regular files that `root`'s process tree holds open. */
export async function openDeletedBytes(root: number): Promise<number> {
  const counted = new Set<string>();
  let bytes = 0;
  for (const pid of await processTree(root).catch(() => [])) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => []);
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (!target.endsWith(' (deleted)')) continue;
      // A descriptor closed since the listing holds no file any more.
      const file = await stat(`/proc/${pid}/fd/${fd}`).catch(() => undefined);
      const key = file && `${file.dev}:${file.ino}`;
      if (!file?.isFile() || counted.has(key!)) continue;
      counted.add(key!);
      bytes += file.blocks * 512;
    }
  }
  return bytes;
}

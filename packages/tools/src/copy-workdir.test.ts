/** A fork's copy of its source's folder: files and folders copied, links copied as links (never followed), fifos left out, owned by the fork's user. */
import { execFileSync } from 'node:child_process';
import {
  link,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { copyWorkdir, WorkdirTooLargeError } from './copy-workdir.js';
import { walkDisk } from './disk-quota.js';

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

it('copies files and folders, keeps links as links, leaves fifos out, and gives it all to the new owner', async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-copy-'));
  const from = path.join(root, 'from');
  const to = path.join(root, 'to');
  await mkdir(path.join(from, 'sub'), { recursive: true });
  await writeFile(path.join(from, 'sub', 'a.txt'), 'kept');
  await symlink('/etc/hostname', path.join(from, 'outside'));
  execFileSync('mkfifo', [path.join(from, 'pipe')]);
  const owner = process.getuid?.() === 0 ? { uid: 12345, gid: 12345 } : undefined;
  await copyWorkdir({ from, to, owner });
  expect(await readFile(path.join(to, 'sub', 'a.txt'), 'utf8')).toBe('kept');
  const link = await lstat(path.join(to, 'outside'));
  expect(link.isSymbolicLink()).toBe(true);
  expect(await readlink(path.join(to, 'outside'))).toBe('/etc/hostname');
  await expect(lstat(path.join(to, 'pipe'))).rejects.toThrow(/ENOENT/);
  if (owner)
    for (const entry of ['.', 'sub', 'sub/a.txt', 'outside'])
      expect((await lstat(path.join(to, entry))).uid).toBe(owner.uid);
  // What the link points to was never touched.
  expect((await lstat('/etc/hostname')).uid).not.toBe(12345);
});

it('holds on disk what its source held: hard links stay links, sparse files keep their holes', async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-copy-'));
  const from = path.join(root, 'from');
  const to = path.join(root, 'to');
  await mkdir(from);
  // As found from outside: a file with nine more names, and sparse files far larger than what they hold.
  await writeFile(path.join(from, 'data'), Buffer.alloc(4 * 1024 * 1024, 1));
  for (let index = 0; index < 9; index++) await link(path.join(from, 'data'), path.join(from, `again-${index}`));
  for (const name of ['sparse-a', 'sparse-b']) {
    await writeFile(path.join(from, name), 'x');
    await truncate(path.join(from, name), 511 * 1024 * 1024);
  }
  const source = (await walkDisk(from)).usage;
  await copyWorkdir({ from, to, quota: { bytes: 64 * 1024 * 1024, entries: 1_000 } });
  const copy = (await walkDisk(to)).usage;
  expect(copy).toEqual(source);
  expect(copy.bytes).toBeLessThan(5 * 1024 * 1024);
  expect((await stat(path.join(to, 'again-8'))).ino).toBe((await stat(path.join(to, 'data'))).ino);
  expect((await stat(path.join(to, 'sparse-a'))).size).toBe(511 * 1024 * 1024);
});

it("copies nothing from a source past the fork's quota, and says what it holds", async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-copy-'));
  const from = path.join(root, 'from');
  const to = path.join(root, 'to');
  await mkdir(from);
  await writeFile(path.join(from, 'big'), Buffer.alloc(3 * 1024 * 1024, 1));
  const copying = copyWorkdir({ from, to, quota: { bytes: 2 * 1024 * 1024, entries: 1_000 } });
  await expect(copying).rejects.toBeInstanceOf(WorkdirTooLargeError);
  await expect(copying).rejects.toThrow(
    /^the source's work directory holds 3\.0 MiB in 1 entries, past the fork's quota \(2\.0 MiB and 1000 entries\): it was not copied$/,
  );
  await expect(lstat(to)).rejects.toThrow(/ENOENT/);
});

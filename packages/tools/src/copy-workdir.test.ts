/** A fork's copy of its source's folder: files and folders copied, links copied as links (never followed), fifos left out, owned by the fork's user. */
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { copyWorkdir } from './copy-workdir.js';

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
  await copyWorkdir(from, to, owner);
  expect(await readFile(path.join(to, 'sub', 'a.txt'), 'utf8')).toBe('kept');
  const link = await lstat(path.join(to, 'outside'));
  expect(link.isSymbolicLink()).toBe(true);
  expect(await readlink(path.join(to, 'outside'))).toBe('/etc/hostname');
  await expect(lstat(path.join(to, 'pipe'))).rejects.toThrow(/ENOENT/);
  if (owner) for (const entry of ['.', 'sub', 'sub/a.txt', 'outside']) expect((await lstat(path.join(to, entry))).uid).toBe(owner.uid);
  // What the link points to was never touched.
  expect((await lstat('/etc/hostname')).uid).not.toBe(12345);
});

/** The file tools never leave the work directory, whatever links the task planted. */
import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { editFileTool } from './edit-file-tool.js';
import { listFilesTool } from './list-files-tool.js';
import { readFileTool } from './read-file-tool.js';
import type { ToolContext } from './tool.js';
import { openResolved, resolveInWorkdir, workdirPathOf } from './workdir-files.js';
import { writeFileTool } from './write-file-tool.js';

let base: string;
let workdir: string;
/** A file outside the work directory, as another task's or the system's would be. */
let secret: string;
let context: ToolContext;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'agentq-paths-'));
  workdir = path.join(base, 'work');
  await mkdir(workdir);
  secret = path.join(base, 'secret.txt');
  await writeFile(secret, 'the secret');
  context = {
    workdir,
    signal: new AbortController().signal,
    timeoutMs: 10_000,
    outputLimit: 2_000,
    isolation: { kind: 'none' },
  };
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const refused = /Refused: .* (is outside the task's work directory|is a hard link)/;

describe('paths in the work directory', () => {
  it('resolves relative paths, and links that stay inside', async () => {
    expect(await resolveInWorkdir({ workdir, path: 'src/a.py' })).toBe(path.join(workdir, 'src/a.py'));
    await mkdir(path.join(workdir, 'v2'));
    await symlink('v2', path.join(workdir, 'latest'));
    await symlink(path.join(workdir, 'v2'), path.join(workdir, 'absolute-latest'));
    expect(await resolveInWorkdir({ workdir, path: 'latest/x.txt' })).toBe(path.join(workdir, 'v2/x.txt'));
    expect(await resolveInWorkdir({ workdir, path: 'absolute-latest/x.txt' })).toBe(path.join(workdir, 'v2/x.txt'));
    expect((await writeFileTool.run({ path: 'latest/x.txt', content: 'ok' }, context)).ok).toBe(true);
    expect(await readFile(path.join(workdir, 'v2/x.txt'), 'utf8')).toBe('ok');
  });

  it.each(['../escape.txt', 'a/../../escape.txt', '/etc/passwd', 'a\0b'])(
    'refuses %s with where files may go',
    async (requested) => {
      await expect(resolveInWorkdir({ workdir, path: requested })).rejects.toThrow(
        /is outside the task's work directory\. Use a relative path/,
      );
    },
  );

  it('names what a spelling of a path opens, relative to the work directory (for approval rules)', async () => {
    await mkdir(path.join(workdir, 'deploy'));
    await symlink('deploy', path.join(workdir, 'innocent'));
    const of = (requested: string) => workdirPathOf({ workdir, path: requested });
    for (const spelling of ['./deploy/a', 'x/../deploy/a', 'deploy//a', 'innocent/a', path.join(workdir, 'deploy/a')])
      expect(of(spelling)).toEqual({ path: 'deploy/a', isFolder: false });
    expect(of('innocent/')).toEqual({ path: 'deploy', isFolder: true });
    expect(of('.')).toEqual({ path: '.', isFolder: true });
    expect(() => of('../work/deploy/a')).toThrow(refused);
    // A work directory not made yet: read as written.
    expect(workdirPathOf({ workdir: path.join(base, 'later'), path: 'x/../deploy//b' })).toEqual({
      path: 'deploy/b',
      isFolder: false,
    });
  });

  it('refuses a link that points out, to read or to write', async () => {
    await symlink('/etc', path.join(workdir, 'sneaky'));
    await expect(readFileTool.run({ path: 'sneaky/passwd' }, context)).rejects.toThrow(refused);
    await expect(writeFileTool.run({ path: 'sneaky/new.txt', content: 'x' }, context)).rejects.toThrow(refused);
  });

  it('refuses to write through a dangling link to a file outside', async () => {
    const target = path.join(base, 'planted.txt');
    await symlink(target, path.join(workdir, 'dl'));
    await expect(writeFileTool.run({ path: 'dl', content: 'owned' }, context)).rejects.toThrow(refused);
    // A relative dangling link that climbs out is the same attack.
    await symlink('../planted-too.txt', path.join(workdir, 'dl2'));
    await expect(writeFileTool.run({ path: 'dl2', content: 'owned' }, context)).rejects.toThrow(refused);
    expect(existsSync(target)).toBe(false);
    expect(existsSync(path.join(base, 'planted-too.txt'))).toBe(false);
  });

  it('refuses `..` taken through a link', async () => {
    await mkdir(path.join(workdir, 'deep/er'), { recursive: true });
    await symlink('deep/er', path.join(workdir, 'shortcut'));
    // Lexically this is inside; through the link, ../../.. climbs out of the work directory.
    await expect(readFileTool.run({ path: 'shortcut/../../../secret.txt' }, context)).rejects.toThrow(refused);
    await symlink('..', path.join(workdir, 'up'));
    await expect(readFileTool.run({ path: 'up/secret.txt' }, context)).rejects.toThrow(refused);
  });

  it('refuses a hard link to a file outside, to read, edit or overwrite', async () => {
    await link(secret, path.join(workdir, 'hard.txt'));
    await expect(readFileTool.run({ path: 'hard.txt' }, context)).rejects.toThrow(/is a hard link \(it has 2 names/);
    await expect(editFileTool.run({ path: 'hard.txt', old_text: 'secret', new_text: 'x' }, context)).rejects.toThrow(
      refused,
    );
    await expect(writeFileTool.run({ path: 'hard.txt', content: 'x' }, context)).rejects.toThrow(refused);
    expect(await readFile(secret, 'utf8')).toBe('the secret');
  });

  it('refuses a link swapped in after the path was checked', async () => {
    await mkdir(path.join(workdir, 'sub'));
    const checked = await resolveInWorkdir({ workdir, path: 'sub/out.txt' });
    expect(checked).toBe(path.join(workdir, 'sub/out.txt'));
    // Between the check and the open, the task's code replaces the folder with a link out.
    await rm(path.join(workdir, 'sub'), { recursive: true });
    await symlink(base, path.join(workdir, 'sub'));
    await expect(openResolved({ workdir, target: checked, path: 'sub/out.txt', access: 'write' })).rejects.toThrow(
      refused,
    );
    // And the last component: a link put where the file was.
    await rm(path.join(workdir, 'sub'));
    await mkdir(path.join(workdir, 'sub'));
    const file = await resolveInWorkdir({ workdir, path: 'sub/out.txt' });
    await symlink(secret, file);
    await expect(openResolved({ workdir, target: file, path: 'sub/out.txt', access: 'write' })).rejects.toThrow(
      refused,
    );
    expect(existsSync(path.join(base, 'out.txt'))).toBe(false);
    expect(await readFile(secret, 'utf8')).toBe('the secret');
    // A folder higher up swapped for a link: the open folder is checked by its descriptor.
    await mkdir(path.join(workdir, 'a/b'), { recursive: true });
    await writeFile(path.join(workdir, 'a/b/notes.txt'), 'mine');
    const notes = await resolveInWorkdir({ workdir, path: 'a/b/notes.txt' });
    await mkdir(path.join(base, 'elsewhere/b'), { recursive: true });
    await writeFile(path.join(base, 'elsewhere/b/notes.txt'), 'not yours');
    await rm(path.join(workdir, 'a'), { recursive: true });
    await symlink(path.join(base, 'elsewhere'), path.join(workdir, 'a'));
    await expect(openResolved({ workdir, target: notes, path: 'a/b/notes.txt', access: 'read' })).rejects.toThrow(
      refused,
    );
  });

  it('refuses a FIFO or a socket at once, never hanging on it', async () => {
    execFileSync('mkfifo', [path.join(workdir, 'pipe')]);
    await expect(readFileTool.run({ path: 'pipe' }, context)).rejects.toThrow(/"pipe" is not a regular file/);
    await expect(writeFileTool.run({ path: 'pipe', content: 'x' }, context)).rejects.toThrow(
      /"pipe" is not a regular file/,
    );
    await expect(editFileTool.run({ path: 'pipe', old_text: 'a', new_text: 'b' }, context)).rejects.toThrow(
      /"pipe" is not a regular file/,
    );
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(workdir, 'sock'), resolve));
    try {
      await expect(readFileTool.run({ path: 'sock' }, context)).rejects.toThrow(/"sock" is not a regular file/);
    } finally {
      server.close();
    }
  });

  it('list_files lists links without following them, and refuses a folder outside', async () => {
    await mkdir(path.join(workdir, 'src/lib'), { recursive: true });
    await writeFile(path.join(workdir, 'src/lib/a.py'), '');
    await writeFile(path.join(workdir, 'src/b.txt'), '');
    await symlink('/etc', path.join(workdir, 'etc-link'));
    expect((await listFilesTool.run({ glob: '**/*.py' }, context)).output).toBe('src/lib/a.py');
    expect((await listFilesTool.run({}, context)).output.split('\n')).toEqual([
      'etc-link',
      'src/',
      'src/b.txt',
      'src/lib/',
      'src/lib/a.py',
    ]);
    await expect(listFilesTool.run({ path: 'etc-link' }, context)).rejects.toThrow(refused);
  });

  it('list_files matches globs as a shell does, in time linear in a path whatever the glob', async () => {
    await mkdir(path.join(workdir, 'src/lib'), { recursive: true });
    for (const name of ['src/lib/a.ts', 'src/lib/b.js', 'src/c.ts', 'README.md', '.env', 'a'.repeat(200)])
      await writeFile(path.join(workdir, name), '');
    const list = async (glob: string) => (await listFilesTool.run({ glob }, context)).output;
    expect(await list('src/**/*.ts')).toBe('src/c.ts\nsrc/lib/a.ts');
    expect(await list('**/*.{ts,js}')).toBe('src/c.ts\nsrc/lib/a.ts\nsrc/lib/b.js');
    expect(await list('*.md')).toBe('README.md');
    expect(await list('.*')).toBe('.env');
    expect(await list('src/lib/?.js')).toBe('src/lib/b.js');
    // A glob a regular expression would backtrack on, against a long name it nearly matches: a glob
    // made a regex took 2 s for six `*a` and 60 characters here, and grows twentyfold with each `*a`.
    const started = performance.now();
    expect(await list(`${'*a'.repeat(12)}*b`)).toBe(`No files match ${'*a'.repeat(12)}*b.`);
    expect(await list(`**/${'*a?'.repeat(12)}*b`)).toMatch(/^No files match/);
    expect(performance.now() - started).toBeLessThan(1_000);
    // Braces multiply: past a thousand alternatives the model is told to use fewer.
    expect(await list('{a,b}'.repeat(20))).toBe(
      `The glob ${'{a,b}'.repeat(20)} has more than 1000 alternatives in braces: use fewer {a,b} groups.`,
    );
    expect(await list('{a,b}'.repeat(9))).toMatch(/^No files match/);
  });
});

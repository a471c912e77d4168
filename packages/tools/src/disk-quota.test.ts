/** A work directory's disk quota: measured as `du` counts it, and held while a process runs. */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import {
  chmod,
  copyFile,
  link,
  mkdir,
  mkdtemp,
  open,
  readFile,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_WALK_DEPTH, MAX_WORKDIR_ENTRIES, walkDisk, WorkdirDisk } from './disk-quota.js';
import { editFileTool } from './edit-file-tool.js';
import { processResult } from './process-result.js';
import { runProcess } from './run-process.js';
import { writeFileTool } from './write-file-tool.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'agentq-disk-'));
});
afterEach(() => {
  // rm, which walks by descriptor: Node's cannot remove folders nested past a path's length.
  execFileSync('rm', ['-rf', dir]);
});

/** What du says a folder holds, without the folder's own blocks (ours counts what is in it). */
const du = (folder: string) =>
  Number(execFileSync('du', ['-s', '-B1', folder], { encoding: 'utf8' }).split('\t')[0]) -
  Number(execFileSync('stat', ['-c', '%b', folder], { encoding: 'utf8' })) * 512;

/** A bash command in the folder, held to `disk`'s quota. */
const run = (command: string, disk: WorkdirDisk) =>
  runProcess({
    file: '/bin/bash',
    args: ['-c', command],
    cwd: dir,
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 60_000,
    outputLimit: 10_000,
    signal: new AbortController().signal,
    disk: disk.quota(),
  });

describe('measuring a work directory', () => {
  it('counts blocks as du does: a sparse file what it uses, a hard link once, a link never followed', async () => {
    await mkdir(path.join(dir, 'sub', 'deeper'), { recursive: true });
    await writeFile(path.join(dir, 'sub', 'deeper', 'data'), Buffer.alloc(300_000, 1));
    await link(path.join(dir, 'sub', 'deeper', 'data'), path.join(dir, 'again'));
    await writeFile(path.join(dir, 'sparse'), '');
    await truncate(path.join(dir, 'sparse'), 1024 ** 3);
    // Outside the folder, a big file it links to: not counted.
    await writeFile(path.join(tmpdir(), `agentq-outside-${path.basename(dir)}`), Buffer.alloc(2_000_000, 1));
    await symlink(path.join(tmpdir(), `agentq-outside-${path.basename(dir)}`), path.join(dir, 'outside'));
    try {
      const { usage } = await walkDisk(dir);
      expect(usage.bytes).toBe(du(dir));
      expect(usage.bytes).toBeLessThan(1_000_000);
      expect(usage.entries).toBe(6);
    } finally {
      await rm(path.join(tmpdir(), `agentq-outside-${path.basename(dir)}`), { force: true });
    }
  });

  it('stops counting once past a limit, and a folder that is not there holds nothing', async () => {
    await Promise.all(Array.from({ length: 600 }, (_, index) => writeFile(path.join(dir, `f${index}`), 'x')));
    // 256 stats at a time: it stops at the end of the batch that passed the limit.
    expect((await walkDisk(dir, { bytes: Number.MAX_SAFE_INTEGER, entries: 10 })).usage.entries).toBe(256);
    expect((await walkDisk(dir)).usage.entries).toBe(600);
    expect((await walkDisk(path.join(dir, 'missing'))).usage).toEqual({ bytes: 0, entries: 0 });
  });
});

describe('a process held to the quota', () => {
  it('is stopped once its folder passes the quota, not by a quota it started past while it deletes', async () => {
    const disk = new WorkdirDisk(dir, { bytes: 10 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES });
    const started = performance.now();
    // Bounded, so that a broken quota cannot fill the machine's disk: 200 MiB at most. Paced, so that the
    // looks (100 ms apart) see it grow: a burst done between two looks is the overshoot the design allows.
    const filled = await run(
      'for i in $(seq 1 200); do head -c 1M /dev/zero > "part-$i"; sleep 0.01; done; echo finished',
      disk,
    );
    expect(filled.output).not.toMatch(/finished/);
    expect(filled.disk).toMatchObject({ stopped: true });
    expect(filled.disk!.usage.bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(performance.now() - started).toBeLessThan(10_000);
    disk.record(filled.disk);
    // Past it from the start: a slow delete runs to its end.
    const removed = await run('for file in part-*; do rm "$file"; sleep 0.01; done; echo done', disk);
    expect(removed.output).toBe('done\n');
    expect(removed.disk).toMatchObject({ stopped: false, usage: { bytes: 0, entries: 0 } });
  });

  it('counts what its processes write to a file they deleted and keep open, which no walk of the folder sees', async () => {
    const disk = new WorkdirDisk(dir, { bytes: 10 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES });
    // Bounded, as above: 200 MiB at most, freed when the process ends; held open a while, as a burst
    // written and closed between two looks (100 ms) leaves nothing behind (CI saw one finish).
    const hidden = await run(
      'exec 3>hidden; rm hidden; for i in $(seq 1 200); do head -c 1M /dev/zero >&3; done; sleep 10; echo finished',
      disk,
    );
    expect(hidden.output).not.toMatch(/finished/);
    expect(hidden.disk).toMatchObject({ stopped: true });
    expect(processResult(hidden, { timeoutMs: 60_000, diskLimit: disk.limit }).output).toMatch(
      /processes hold [\d.]+ MiB in files they deleted but keep open .*: close them, or write to files you keep. Delete what you no longer need/,
    );
    // A file deleted and closed holds nothing: the next run may write.
    const after = await run('head -c 1M /dev/zero > kept; echo written', disk);
    expect(after.output).toBe('written\n');
  });

  it('walks the folder again only when its filesystem grew by more than its room since the last walk', async () => {
    // A room of a GiB: other writes on this filesystem meanwhile (tests at once) stay well within it.
    const roomy = new WorkdirDisk(dir, { bytes: 1024 ** 3, entries: MAX_WORKDIR_ENTRIES });
    const first = await run('head -c 1M /dev/zero > a', roomy);
    roomy.record(first.disk);
    // A small write: the filesystem's growth fits the room, so the last walk stands (plus that growth).
    const second = await run('head -c 1M /dev/zero > b', roomy);
    expect(second.disk!.last).toEqual(first.disk!.last);
    expect(second.disk!.usage.bytes).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    // With a room of 3 MiB left, 4 MiB more is past it: walked, and told exactly.
    const tight = new WorkdirDisk(dir, { bytes: 5 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES });
    tight.record(second.disk);
    const third = await run('head -c 4M /dev/zero > c', tight);
    expect(third.disk!.last!.at).toBeGreaterThan(first.disk!.last!.at);
    expect(third.disk!.usage.bytes).toBe(du(dir));
  });

  it('is held by the file tools too: a write or an edit past it is refused, with what to do', async () => {
    const disk = new WorkdirDisk(dir, { bytes: 256 * 1024, entries: MAX_WORKDIR_ENTRIES });
    const context = {
      workdir: dir,
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      outputLimit: 10_000,
      isolation: { kind: 'none' as const },
      disk,
    };
    expect(await writeFileTool.run({ path: 'a.txt', content: 'small' }, context)).toMatchObject({ ok: true });
    const refused =
      /^Not written: the work directory holds [\d.]+ KiB in 1 entry; its quota is 256\.0 KiB and 200000 entries, and [\d.]+ KiB more would pass it\. Delete what you no longer need \(with bash: rm\), then write again\.$/;
    expect(await writeFileTool.run({ path: 'b.txt', content: 'x'.repeat(300 * 1024) }, context)).toMatchObject({
      ok: false,
      output: expect.stringMatching(refused),
    });
    expect(
      await editFileTool.run({ path: 'a.txt', old_text: 'small', new_text: 'y'.repeat(300 * 1024) }, context),
    ).toMatchObject({ ok: false, output: expect.stringMatching(refused) });
    expect(await readFile(path.join(dir, 'a.txt'), 'utf8')).toBe('small');
    expect(existsSync(path.join(dir, 'b.txt'))).toBe(false);
  });

  it('counts a folder of many empty files by its entries', async () => {
    const disk = new WorkdirDisk(dir, { bytes: 1024 ** 3, entries: 500 });
    const made = await run('for i in $(seq 1 100000); do : > "f$i"; done', disk);
    expect(made.disk).toMatchObject({ stopped: true });
    expect(made.disk!.usage.entries).toBeGreaterThan(500);
    // Stopped within a look or two: nowhere near the 100,000 it would have made.
    expect(made.disk!.usage.entries).toBeLessThan(50_000);
  });
});

describe('folders nested deep', () => {
  const nest = (levels: number, name: string) =>
    `for i in $(seq ${levels}); do mkdir ${name} && cd ${name} || exit 1; done; head -c 3M /dev/zero > hidden; echo nested`;
  const quota = { bytes: 2 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES };

  it('are counted past what a path can name: the walk goes by descriptors', async () => {
    const disk = new WorkdirDisk(dir, quota);
    disk.record((await run('true', disk)).disk);
    // 300 levels of 20 characters: past 4,096 bytes of path, where a walk by path could not go.
    const nested = await run(`${nest(300, 'd'.repeat(20))}; sleep 3; echo slept`, disk);
    expect(nested.disk).toMatchObject({ stopped: true });
    expect(nested.disk!.stoppedAt!.tooDeep).toBeUndefined();
    expect(nested.disk!.stoppedAt!.bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(processResult(nested, { timeoutMs: 60_000, diskLimit: disk.limit }).output).toMatch(
      /\[stopped: the work directory holds [\d.]+ MiB in \d+ entries; its quota is 2\.0 MiB/,
    );
  });

  it(`count as past the quota below ${MAX_WALK_DEPTH} levels once the filesystem grew past its room, and may be removed`, async () => {
    const disk = new WorkdirDisk(dir, quota);
    disk.record((await run('true', disk)).disk);
    const nested = await run(`${nest(MAX_WALK_DEPTH + 50, 'd')}; sleep 3; echo slept`, disk);
    expect(nested.disk).toMatchObject({ stopped: true, usage: { tooDeep: true } });
    expect(nested.output).not.toMatch(/slept/);
    expect(processResult(nested, { timeoutMs: 60_000, diskLimit: disk.limit }).output).toMatch(
      /\[stopped: the work directory's folders nest too deep to be measured \(more than 512 levels; its quota is 2\.0 MiB\): remove the deepest \(rm -r\)\. Delete what you no longer need \(rm\), then go on in smaller steps\]$/,
    );
    disk.record(nested.disk);
    const context = {
      workdir: dir,
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      outputLimit: 10_000,
      isolation: { kind: 'none' as const },
      disk,
    };
    expect((await writeFileTool.run({ path: 'more.txt', content: 'more' }, context)).output).toMatch(
      /^Not written: the work directory's folders nest too deep/,
    );
    // Started so: its removal runs to its end, and the folder is measured again.
    const removed = await run('rm -r d; echo removed', disk);
    expect(removed).toMatchObject({ output: 'removed\n', disk: { stopped: false } });
    expect((await walkDisk(dir)).usage).toEqual({ bytes: 0, entries: 0 });
    disk.record(removed.disk);
    expect(await writeFileTool.run({ path: 'more.txt', content: 'more' }, context)).toMatchObject({ ok: true });
  });
});

describe('a folder that holds nothing', () => {
  it("is told so on the walk's own thread: a task's first write does not wait for the thread pool", async () => {
    // Every thread of the pool held: each opens a FIFO that no writer has opened yet.
    const fifos = await mkdtemp(path.join(tmpdir(), 'agentq-fifos-'));
    const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
    const names = Array.from({ length: threads }, (_, index) => path.join(fifos, `fifo-${index}`));
    for (const name of names) execFileSync('mkfifo', [name]);
    const held = names.map((name) => open(name, 'r'));
    // Answered before this loop's next turn, or not (a walk through the pool waits for a thread).
    const walked = (folder: string) => {
      const walk = walkDisk(folder);
      const answer = Promise.race([
        walk.then(({ usage }) => usage),
        new Promise((resolve) => setImmediate(() => resolve('waits for the pool'))),
      ]);
      return { walk, answer };
    };
    let full: ReturnType<typeof walked> | undefined;
    let fifo: ReturnType<typeof walked> | undefined;
    try {
      mkdirSync(path.join(dir, 'empty'));
      expect(await walked(path.join(dir, 'empty')).answer).toEqual({ bytes: 0, entries: 0 });
      expect(await walked(path.join(dir, 'missing')).answer).toEqual({ bytes: 0, entries: 0 });
      // One that holds something is walked through the pool (and the pool is held: the check above means something).
      full = walked(dir);
      expect(await full.answer).toBe('waits for the pool');
      // A FIFO where the folder was (a task that replaced it) is no folder: never opened as one on this thread.
      fifo = walked(names[0]!);
      expect(await fifo.answer).toBe('waits for the pool');
    } finally {
      // Each FIFO's writer lets its thread go.
      for (const name of names) closeSync(openSync(name, 'w'));
      await Promise.all((await Promise.all(held)).map((handle) => handle.close()));
      await rm(fifos, { recursive: true });
    }
    expect((await full.walk).usage.entries).toBe(1);
    expect((await fifo.walk).usage).toEqual({ bytes: 0, entries: 0 });
  });
});

describe('a walk raced by its task', () => {
  it('never leaves the folder: a subfolder swapped for a link to / is not entered', async () => {
    // A racer swaps a folder and a link to / with renameat2(RENAME_EXCHANGE), as fast as it can.
    await mkdir(path.join(dir, 'real', 'inner'), { recursive: true });
    await writeFile(path.join(dir, 'real', 'inner', 'file'), Buffer.alloc(10_000, 1));
    await symlink('/', path.join(dir, 'l'));
    const swap =
      'import ctypes, sys\nlibc = ctypes.CDLL(None)\nwhile True: libc.syscall(316, -100, b"real", -100, b"l", 2)';
    const racer = spawn('/usr/bin/python3', ['-c', swap], { cwd: dir, stdio: 'ignore' });
    try {
      for (let walk = 0; walk < 200; walk++) {
        const { usage } = await walkDisk(dir);
        // At most: the folder, the link, the folder inside and its file; the folder twice when each name
        // showed it in turn (the walk of / would count dozens).
        expect(usage.entries).toBeLessThanOrEqual(6);
        expect(usage.bytes).toBeLessThan(1024 * 1024);
      }
    } finally {
      racer.kill('SIGKILL');
    }
  });
});

describe('a folder its task closed', () => {
  const uid = 65534;
  /**
   * `walks` walks of `dir` as uid 65534, a worker that is not root, with `racer` (python, in `dir`) run by
   * that uid beside it; the usage of the last. The walker (it imports only Node's own modules, and the
   * files beside it) is copied where that uid can read it: the checkout may not be.
   */
  async function walkAsOwner(walks: number, racer?: string): Promise<{ bytes: number; entries: number }> {
    execFileSync('chown', ['-R', `${uid}:${uid}`, dir]);
    const copy = await mkdtemp(path.join(tmpdir(), 'agentq-walker-'));
    await chmod(copy, 0o755);
    for (const name of ['disk-quota.js', 'open-deleted-files.js']) {
      await copyFile(path.join(import.meta.dirname, '..', 'dist', name), path.join(copy, name));
      await chmod(path.join(copy, name), 0o644);
    }
    await writeFile(path.join(copy, 'package.json'), '{"type":"module"}');
    await chmod(path.join(copy, 'package.json'), 0o644);
    const racing = racer && spawn('/usr/bin/python3', ['-c', racer], { cwd: dir, stdio: 'ignore', uid, gid: uid });
    try {
      const script = `import(${JSON.stringify(path.join(copy, 'disk-quota.js'))}).then(async ({ walkDisk }) => { let last; for (let walk = 0; walk < ${walks}; walk++) last = await walkDisk(${JSON.stringify(dir)}); console.log(JSON.stringify(last.usage)); })`;
      // Thrown (a non-zero exit) when a walk rejects.
      return JSON.parse(
        execFileSync(process.execPath, ['-e', script], { uid, gid: uid, encoding: 'utf8', cwd: copy }),
      ) as { bytes: number; entries: number };
    } finally {
      if (racing) racing.kill('SIGKILL');
      await rm(copy, { recursive: true, force: true });
    }
  }

  // Another uid's walk, here: only root can start one.
  it.skipIf(process.getuid?.() !== 0)(
    'is opened again and counted: chmod 000 hides nothing from a worker that is not root',
    async () => {
      await mkdir(path.join(dir, 'closed'));
      await writeFile(path.join(dir, 'closed', 'hidden'), Buffer.alloc(500_000, 1));
      await chmod(path.join(dir, 'closed'), 0o000);
      const usage = await walkAsOwner(1);
      expect(usage.entries).toBe(2);
      expect(usage.bytes).toBeGreaterThanOrEqual(500_000);
    },
  );

  it.skipIf(process.getuid?.() !== 0)(
    'opened again never follows a link swapped in for it, nor fails the walk',
    async () => {
      // Outside the folder: a file of the worker's uid that the task must not change through the walk.
      const outside = path.join(tmpdir(), `agentq-outside-${path.basename(dir)}`);
      await writeFile(outside, "the worker uid's own\n");
      execFileSync('chown', [`${uid}:${uid}`, outside]);
      await chmod(outside, 0o644);
      await mkdir(path.join(dir, 'closed'));
      await chmod(path.join(dir, 'closed'), 0o000);
      await symlink(outside, path.join(dir, 'link'));
      // The task closes its folder again and again (a walk opens it back), and swaps it with a link to that
      // file with renameat2(RENAME_EXCHANGE), as fast as it can: a walk that chmods the name it met closed
      // (EACCES), then opens it, may meet the link there.
      const swap = [
        'import ctypes, os',
        'libc = ctypes.CDLL(None)',
        'os.chmod("closed", 0o700)',
        'folder = os.open("closed", os.O_RDONLY | os.O_DIRECTORY)',
        'while True:',
        '  os.fchmod(folder, 0)',
        '  libc.syscall(316, -100, b"closed", -100, b"link", 2)',
      ].join('\n');
      try {
        const usage = await walkAsOwner(2_000, swap);
        expect(usage.entries).toBeLessThanOrEqual(3);
        expect((await stat(outside)).mode & 0o777).toBe(0o644);
      } finally {
        await rm(outside, { force: true });
      }
    },
  );
});

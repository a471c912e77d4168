/** The jail of process tools, attacked from inside with real bwrap processes. */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bashTool, MAX_COMMAND_BYTES } from './bash-tool.js';
import { MAX_WORKDIR_ENTRIES, WorkdirDisk } from './disk-quota.js';
import { jailIdentity } from './jail-identity.js';
import { nodeTool } from './node-tool.js';
import { egressRules } from './jail-egress.js';
import { Jail, JAIL_GATE } from './jail.js';
import { resolveInterpreters } from './interpreters.js';
import { chooseIsolation, type ProcessIsolation } from './process-isolation.js';
import { pythonTool } from './python-tool.js';
import type { ToolContext } from './tool.js';
import { writeFileTool } from './write-file-tool.js';
import { processesMatching } from '../../../tests/helpers/processes.js';
import { withPublicServer } from '../../../tests/helpers/public-network.js';

let root: string;
let isolation: ProcessIsolation;
let workdir: string;
let context: ToolContext;
const limits = { processes: 64, memoryMb: 512, fileMb: 64, cpuSeconds: 20 };

// As a worker runs them: from its tool launcher (tool-launcher.ts), whose jail is this same code.
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-jail-'));
  isolation = await chooseIsolation({
    mode: 'bwrap',
    workRoot: root,
    jail: { network: 'none', limits, separateProcess: true },
  });
});
afterAll(async () => {
  if (isolation.kind === 'jail') await isolation.jail.close();
  await rm(root, { recursive: true, force: true });
});
beforeEach(async () => {
  workdir = path.join(root, `task-${Math.random().toString(36).slice(2)}`);
  if (isolation.kind === 'jail') await isolation.jail.prepareWorkdir(workdir);
  context = { workdir, signal: new AbortController().signal, timeoutMs: 10_000, outputLimit: 8_000, isolation };
});

const bash = (command: string, overrides: Partial<ToolContext> = {}) =>
  bashTool.run({ command }, { ...context, ...overrides });

/** Host processes running as a uid. */
function processesOf(uid: number): string[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '-u', String(uid)], { encoding: 'utf8' })
      .trim()
      .split('\n');
  } catch {
    return []; // ps exits 1 when there are none
  }
}

describe('the jail', () => {
  it('runs bash, python and node in the work directory, which is all they can write', async () => {
    expect(isolation.kind).toBe('jail');
    expect(await bash('pwd; echo made > out.txt; id -u')).toEqual({ ok: true, output: `${workdir}\n1000` });
    expect(await readFile(path.join(workdir, 'out.txt'), 'utf8')).toBe('made\n');
    expect(await pythonTool.run({ code: 'print(open("out.txt").read().strip(), 6 * 7)' }, context)).toEqual({
      ok: true,
      output: 'made 42',
    });
    expect(await nodeTool.run({ code: 'console.log(require("fs").readdirSync(".").join(","))' }, context)).toEqual({
      ok: true,
      output: 'out.txt',
    });
    const writes = await bash('touch /usr/evil 2>&1; touch /evil 2>&1; echo tmp > /tmp/t && cat /tmp/t');
    expect(writes.output).toMatch(/touch: cannot touch '\/usr\/evil': Read-only file system/);
    expect(writes.output).toMatch(/touch: cannot touch '\/evil': Read-only file system/);
    expect(writes.output).toMatch(/\ntmp$/);
  });

  it('shows none of the rest of the machine: homes, secrets, other tasks, the host /proc', async () => {
    const other = path.join(root, 'other-task');
    await mkdir(other);
    await writeFile(path.join(other, 'private.txt'), 'not yours');
    const result = await bash(
      `ls /home /root 2>&1; cat /etc/shadow 2>&1; cat ${other}/private.txt 2>&1; ls ${root}; ls /proc | grep -c '^[0-9]'`,
    );
    expect(result.output).toMatch(/ls: cannot access '\/home': No such file or directory/);
    expect(result.output).toMatch(/ls: cannot access '\/root': No such file or directory/);
    expect(result.output).toMatch(/cat: \/etc\/shadow: No such file or directory/);
    expect(result.output).toMatch(/private\.txt: No such file or directory/);
    expect(result.output).not.toMatch(/not yours/);
    // The parent folder shows only this task's own directory; /proc only the jail's few processes.
    const lines = result.output.split('\n');
    expect(lines.at(-2)).toBe(path.basename(workdir));
    expect(Number(lines.at(-1))).toBeLessThan(10);
  });

  it('has an /etc of a few copied entries, read-only, with no private key', async () => {
    const result = await bash(
      'ls -A /etc | tr "\\n" " "; echo; ls /etc/ssl/private 2>&1; grep -c . /etc/passwd; touch /etc/x 2>&1; test -s /etc/ssl/certs/ca-certificates.crt && echo certs',
    );
    const [listing] = result.output.split('\n');
    for (const name of listing!.trim().split(' '))
      expect([
        'alternatives',
        'ssl',
        'ca-certificates',
        'pki',
        'hosts',
        'nsswitch.conf',
        'localtime',
        'ld.so.cache',
        'ld.so.conf',
        'ld.so.conf.d',
        'mime.types',
        'passwd',
        'group',
        'resolv.conf',
      ]).toContain(name);
    expect(result.output).toMatch(/ls: cannot access '\/etc\/ssl\/private': No such file or directory/);
    expect(result.output).toMatch(/\n3\n/);
    expect(result.output).toMatch(/touch: cannot touch '\/etc\/x': Read-only file system/);
    if (existsSync('/etc/ssl/certs/ca-certificates.crt')) expect(result.output).toMatch(/certs$/);
  });

  it("gives no process the worker's environment", async () => {
    process.env.AGENTQ_TEST_SECRET_KEY = 'sk-leak-me';
    try {
      const result = await bash(
        'env; tr "\\0" "\\n" < /proc/1/environ; tr "\\0" "\\n" < /proc/$PPID/environ; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"',
      );
      expect(result.ok).toBe(true);
      expect(result.output).not.toMatch(/sk-leak-me|OPENAI_API_KEY|REDIS_URL|AGENTQ_TEST/);
      expect(result.output).toMatch(/HOME=/);
    } finally {
      delete process.env.AGENTQ_TEST_SECRET_KEY;
    }
  });

  it('hands no process a descriptor the worker inherited without close-on-exec', async () => {
    // A worker started by a shell or supervisor that leaked a descriptor (here 251, a secret file
    // opened read-write): Node passes such a descriptor on to what it spawns.
    const secret = path.join(root, 'inherited-secret');
    await writeFile(secret, 'sk-inherited');
    const tools = new URL('../dist/index.js', import.meta.url).href;
    const script = `
      import { bashTool, pythonTool, nodeTool, chooseIsolation } from ${JSON.stringify(tools)};
      const isolation = await chooseIsolation({ mode: 'bwrap', workRoot: ${JSON.stringify(root)}, jail: { network: 'none', limits: ${JSON.stringify(limits)}, separateProcess: true } });
      const context = { workdir: ${JSON.stringify(workdir)}, signal: new AbortController().signal, timeoutMs: 10000, outputLimit: 8000, isolation };
      const results = [
        await bashTool.run({ command: 'ls -m /proc/$$/fd; cat <&251 2>&1; echo >&251 written 2>&1' }, context),
        await pythonTool.run({ code: ['import os', 'try: print(os.read(251, 100))', 'except OSError as e: print(e.strerror)'].join(String.fromCharCode(10)) }, context),
        await nodeTool.run({ code: 'try { console.log(require("fs").readFileSync(251, "utf8")) } catch (e) { console.log(e.code) }' }, context),
      ];
      console.log(JSON.stringify(results));
      await isolation.jail.close();
    `;
    const child = spawn(
      'bash',
      ['-c', 'exec 251<>"$1"; exec "$0" --input-type=module -e "$2"', process.execPath, secret, script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    const [inBash, inPython, inNode] = JSON.parse(output) as Array<{ ok: boolean; output: string }>;
    expect(inBash!.output).toMatch(
      /^0, 1, 2\n.*251: Bad file descriptor\n.*251: Bad file descriptor\n\[exit status 1\]$/,
    );
    expect(inPython!.output).toBe('Bad file descriptor');
    expect(inNode!.output).toBe('EBADF');
    expect(await readFile(secret, 'utf8')).toBe('sk-inherited');
  });

  it('has no capability: CapEff is 0 and mknod fails', async () => {
    const result = await bash('grep CapEff /proc/self/status; mknod dev-null c 1 3 2>&1; echo "mknod=$?"');
    expect(result.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(result.output).toMatch(/mknod=1/);
  });

  // The numbers are x86_64's.
  it.skipIf(process.arch !== 'x64')(
    'refuses the system calls a task never needs: io_uring, userfaultfd, bpf, keys, ptrace, mounts, namespaces',
    async () => {
      // Each would succeed, or fail otherwise, without the filter: io_uring_setup(1, params) makes a ring,
      // ptrace(TRACEME) and unshare(0) return 0.
      const probe = [
        'import ctypes, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'params = ctypes.create_string_buffer(120)',
        'calls = {"io_uring_setup": (425, 1, params), "userfaultfd": (323, 0), "bpf": (321, 0, 0, 0), "keyctl": (250, 0, 0), "perf_event_open": (298, 0, 0, -1, -1, 0), "ptrace": (101, 0, 0, 0, 0), "unshare": (272, 0), "mount": (165, 0, 0, 0, 0, 0), "setns": (308, 0, 0), "kcmp": (312, 1, 1, 0, 0, 0)}',
        'for name, (nr, *args) in calls.items():',
        '    result = libc.syscall(nr, *args)',
        '    print(name, "refused" if result == -1 and ctypes.get_errno() == 1 else f"gave {result} ({os.strerror(ctypes.get_errno())})")',
        'print("clone3", "fell back" if libc.syscall(435, 0, 0) == -1 and ctypes.get_errno() == 38 else "ran")',
        'pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)\nprint("fork ok")',
      ].join('\n');
      const result = await pythonTool.run({ code: probe }, context);
      expect(result.output.split('\n')).toEqual(
        [
          'io_uring_setup',
          'userfaultfd',
          'bpf',
          'keyctl',
          'perf_event_open',
          'ptrace',
          'unshare',
          'mount',
          'setns',
          'kcmp',
        ]
          .map((name) => `${name} refused`)
          .concat(['clone3 fell back', 'fork ok']),
      );
      // What programs do every day still works: threads, processes, node's own I/O.
      expect(
        await bash(
          'python3 -c "import threading; t = threading.Thread(target=print, args=(1,)); t.start(); t.join()"; (echo sub) | cat',
        ),
      ).toEqual({ ok: true, output: '1\nsub' });
    },
  );

  it('has no network but its own loopback', async () => {
    const server = createServer((socket) => socket.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const result = await bash(
        `(exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3) 2>&1; echo "rc=$?"; ls /sys/class/net 2>/dev/null; cat /proc/net/dev | tail -n +3 | cut -d: -f1`,
      );
      expect(result.output).toMatch(/Connection refused/);
      expect(result.output).not.toMatch(/reached/);
      expect(result.output.trim().split('\n').at(-1)!.trim()).toBe('lo');
    } finally {
      server.close();
    }
  });

  it('leaves nothing running after the call: setsid, nohup and double forks included', async () => {
    const marker = `98${Math.floor(Math.random() * 1e6)}`;
    const result = await bash(
      `setsid sleep ${marker}1 & nohup sleep ${marker}2 >/dev/null 2>&1 & (sleep ${marker}3 &) ; sleep 0.2; echo started`,
    );
    expect(result).toEqual({ ok: true, output: 'started' });
    await expect.poll(() => processesMatching(`sleep ${marker}`), { timeout: 3_000 }).toEqual([]);
  });

  it('runs nothing of a task whose worker died before the jail was let go: its gate fails closed', async () => {
    // The gate as the jail's first line runs it: the pipe closed without its byte (a killed launcher).
    const gated = spawn('/bin/bash', ['-c', `${JAIL_GATE}echo ran`], {
      stdio: ['ignore', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    let output = '';
    gated.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    (gated.stdio[4] as NodeJS.WritableStream).end();
    const code = await new Promise((resolve) => gated.once('close', resolve));
    expect({ code, output }).toEqual({ code: 125, output: '' });
    // Its byte lets it go.
    const letGo = spawn('/bin/bash', ['-c', `${JAIL_GATE}echo ran`], {
      stdio: ['ignore', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    let ran = '';
    letGo.stdout!.on('data', (chunk: Buffer) => (ran += chunk.toString('utf8')));
    (letGo.stdio[4] as NodeJS.WritableStream).end('x');
    expect(await new Promise((resolve) => letGo.once('close', resolve))).toBe(0);
    expect(ran).toBe('ran\n');
  });

  it('leaves nothing when cancelled while the jail is still starting', async () => {
    const marker = `97${Math.floor(Math.random() * 1e6)}`;
    for (let round = 0; round < 30; round++) {
      const controller = new AbortController();
      const running = bash(`sleep ${marker}`, { signal: controller.signal });
      // 0 to 5 ms in: bubblewrap is still making the jail, its first process maybe not yet watching its parent.
      setTimeout(() => controller.abort(), round % 6);
      expect((await running).ok).toBe(false);
    }
    // Nothing to wait for: a run that was killed returns once its jail is gone.
    expect(processesMatching(`sleep ${marker}`)).toEqual([]);
  });

  it('ends a fork bomb at its process limit, and leaves nothing behind', async () => {
    const started = Date.now();
    const result = await bash(':(){ :|:& };: ; sleep 1; echo survived', { timeoutMs: 5_000 });
    expect(result.output).toMatch(/limit of 64 processes was reached|timed out/);
    expect(Date.now() - started).toBeLessThan(9_000);
    const identity = jailIdentity(workdir);
    if (identity) await expect.poll(() => processesOf(identity.uid), { timeout: 3_000 }).toEqual([]);
    // The next call of the task runs as usual.
    expect(await bash('echo fine')).toEqual({ ok: true, output: 'fine' });
  });

  it('refuses 2 GB of memory and files past the size limit', async () => {
    const python = await pythonTool.run({ code: 'x = bytearray(2 * 1024 ** 3)\nprint("allocated")' }, context);
    expect(python.ok).toBe(false);
    expect(python.output).toMatch(/MemoryError/);
    const node = await nodeTool.run(
      { code: 'const b = Buffer.alloc(2 * 1024 ** 3, 1); console.log("allocated", b.length)' },
      context,
    );
    expect(node.ok).toBe(false);
    expect(node.output).not.toMatch(/allocated/);
    const big = await bash(
      'head -c 100M /dev/zero > big.bin; echo "rc=$?"; head -c 100M /dev/zero > /tmp/big.bin; echo "tmp=$?"',
    );
    expect(big.output).toMatch(/File size limit exceeded|rc=1\d\d/);
    expect((await stat(path.join(workdir, 'big.bin'))).size).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(big.output).toMatch(/tmp=1/);
  });

  it('bounds the memory of the whole run, shared maps, memfd files and tmpfs included, and ends it whole', async () => {
    if (process.getuid?.() !== 0) return;
    const tooMuch = 'MIB = 1 << 20\n';
    // Each under the per-process data limit (512 MiB) that alone let them all through.
    const shared = await pythonTool.run(
      {
        code: `${tooMuch}import mmap\nm = mmap.mmap(-1, 700 * MIB)\nfor i in range(0, 700 * MIB, 4096): m[i] = 1\nprint("held")`,
      },
      context,
    );
    // Twelve files of 60 MiB: each within the file size limit (64 MiB).
    const memfd = await pythonTool.run(
      {
        code: `${tooMuch}import os\nfds = [os.memfd_create("x") for _ in range(12)]\nfor fd in fds: os.write(fd, b"x" * (60 * MIB))\nprint("held")`,
      },
      context,
    );
    // 60 + 60 MiB of tmpfs files and a 420 MiB map: each fits, together they do not. A sleeper is ended too.
    const started = Date.now();
    const tmpfs = await bash(
      `sleep 30 & head -c 60M /dev/zero > /tmp/a; head -c 60M /dev/zero > /dev/shm/b; python3 -c 'import mmap; m = mmap.mmap(-1, 420 << 20); [m.__setitem__(i, 1) for i in range(0, 420 << 20, 4096)]; print("he" + "ld")'; wait`,
      { timeoutMs: 20_000 },
    );
    for (const result of [shared, memfd, tmpfs]) {
      expect(result.ok).toBe(false);
      expect(result.output).not.toMatch(/held/);
      expect(result.output).toMatch(
        /\[killed: the tool's processes used all of their 512\.0 MiB of memory together \(files in \/tmp and \/dev\/shm count too\): use less at once/,
      );
    }
    expect(Date.now() - started).toBeLessThan(15_000);
    // The next call of the task runs as usual, and its processes are in a group of their own.
    const groups = await bash('cat /proc/self/cgroup');
    expect(groups.output).toMatch(/memory:\/agentq\/\d+\/run-\d+$/m);
    expect(groups.output).toMatch(/pids:\/agentq\/\d+\/run-\d+$/m);
  }, 60_000);

  it("stops a process that fills its work directory past the task's disk quota, and lets it delete", async () => {
    const disk = new WorkdirDisk(workdir, { bytes: 20 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES });
    const quoted = { ...context, timeoutMs: 60_000, disk };
    // A file at a time, each within the file size limit: only the folder's quota stops it.
    const filled = await bash('for i in $(seq 1 300); do head -c 1M /dev/zero > part-$i; done; echo finished', quoted);
    expect(filled.ok).toBe(false);
    expect(filled.output).not.toMatch(/finished/);
    expect(filled.output).toMatch(
      /\[stopped: the work directory holds [\d.]+ MiB in \d+ entries; its quota is 20\.0 MiB and 200000 entries\. Delete what you no longer need \(rm\), then go on in smaller steps\]$/,
    );
    // Stopped within a look or two of passing it, far before the 300 MiB it would have written.
    const held = Number(execFileSync('du', ['-s', '-B1', workdir], { encoding: 'utf8' }).split('\t')[0]);
    expect(held).toBeGreaterThan(20 * 1024 * 1024);
    expect(held).toBeLessThan(200 * 1024 * 1024);
    // Past its quota, a run that deletes is not stopped, and a write fits again after it.
    const writeFile = (content: string) => writeFileTool.run({ path: 'note.txt', content }, quoted);
    expect(await writeFile('x'.repeat(1024))).toMatchObject({
      ok: false,
      output: expect.stringMatching(
        /^Not written: the work directory holds [\d.]+ MiB in \d+ entries; its quota is 20\.0 MiB and 200000 entries, and 1\.0 KiB more would pass it\. Delete what you no longer need \(with bash: rm\), then write again\.$/,
      ),
    });
    expect(await bash('rm part-*; echo removed', quoted)).toEqual({
      ok: true,
      output: expect.stringMatching(
        /^removed\n\[the work directory was past its quota when this started, so this run could only delete: .* It is under it now: the next call may write again\.\]$/,
      ),
    });
    expect(await writeFile('x'.repeat(1024))).toEqual({ ok: true, output: 'Wrote 1024 bytes to note.txt' });
    // A quick run that passes it between two looks is told so.
    const quick = await bash('head -c 15M /dev/zero > a; head -c 15M /dev/zero > b; echo wrote', quoted);
    expect(quick.output).toMatch(
      /^wrote\n\[the work directory holds [\d.]+ MiB in \d+ entries; its quota is 20\.0 MiB and 200000 entries: delete files \(rm\) before writing more, or the next tool that writes is stopped\]$/,
    );
  });

  it('lets a run that starts past the quota only delete, whatever its folder held before', async () => {
    const disk = new WorkdirDisk(workdir, { bytes: 20 * 1024 * 1024, entries: 1_000 });
    const quoted = { ...context, disk };
    // Stopped, or quicker than a look: past the quota of entries when it ends.
    const first = await bash('mkdir many && cd many && touch $(seq 1 1500) && echo made', quoted);
    expect(first.output).toMatch(
      /the work directory holds [\d.]+ (KiB|MiB) in \d+ entries; its quota is 20\.0 MiB and 1000 entries/,
    );
    const held = execFileSync('find', [workdir], { encoding: 'utf8' }).trim().split('\n').length;
    expect(held).toBeGreaterThan(1_001);
    // The next runs cannot make a name nor grow a file, however they try; their output says why.
    const second = await bash(
      "cd many && touch $(seq 2000 3500); mkdir more; ln -s 1 link; echo x >> 1; python3 -c \"open('new', 'w')\"; echo tried",
      quoted,
    );
    expect(second.output).toMatch(/Disk quota exceeded/);
    expect(second.output).toMatch(/File size limit exceeded|File too large/);
    expect(second.output).toMatch(
      /tried\n\[the work directory was past its quota when this started, so this run could only delete: no file could be made or grow \("Disk quota exceeded", "File too large"; a redirection with > counts as making one, even to \/dev\/null\)\. It still is \(the work directory holds [\d.]+ (KiB|MiB) in \d+ entries; its quota is 20\.0 MiB and 1000 entries\): delete more \(rm\) before anything else\.\]$/,
    );
    expect(execFileSync('find', [workdir], { encoding: 'utf8' }).trim().split('\n').length).toBe(held);
    // Deleting brings it under; then it writes again.
    expect((await bash('rm -r many; echo removed', quoted)).output).toMatch(
      /^removed\n\[the work directory was past its quota when this started, so this run could only delete: .* It is under it now: the next call may write again\.\]$/,
    );
    expect(await bash('touch again && echo wrote', quoted)).toEqual({ ok: true, output: 'wrote' });
  });

  it("runs a root worker's task as its own unprivileged uid, which owns what the file tools write", async () => {
    const identity = jailIdentity(workdir);
    if (!identity) return expect(process.getuid?.()).not.toBe(0);
    expect(identity.uid).toBeGreaterThanOrEqual(2_000_000_000);
    expect((await stat(workdir)).uid).toBe(identity.uid);
    await writeFileTool.run({ path: 'notes/a.txt', content: 'one\n' }, context);
    expect((await stat(path.join(workdir, 'notes/a.txt'))).uid).toBe(identity.uid);
    expect(await bash('echo two >> notes/a.txt && mkdir notes/more && cat notes/a.txt')).toEqual({
      ok: true,
      output: 'one\ntwo',
    });
    expect((await stat(path.join(workdir, 'notes/more'))).uid).toBe(identity.uid);
    expect(jailIdentity(path.join(root, 'another-task'))!.uid).not.toBe(identity.uid);
  });

  it("runs a command as long as bash takes, behind the jail's own prelude", async () => {
    const atCap = `echo ${'y'.repeat(MAX_COMMAND_BYTES - 13)} | wc -c`;
    expect(await bash(atCap)).toEqual({ ok: true, output: String(MAX_COMMAND_BYTES - 12) });
  });

  it('still kills the whole tree on timeout', async () => {
    // Both sleep for days: only killing the tree returns.
    const result = await bash('sleep 600000 & sleep 600000; wait', { timeoutMs: 300 });
    expect(result.output).toMatch(/timed out after 300 ms/);
  });
});

describe('choosing the isolation', () => {
  it('auto refuses process tools, with the reason and the fix, where the jail cannot run', async () => {
    // mkdtemp makes a folder only its owner can search; agentq opens up its data and work folders, not their parents.
    const blocked = await mkdtemp(path.join(tmpdir(), 'agentq-blocked-'));
    const workRoot = path.join(blocked, 'data', 'work');
    try {
      const choice = await chooseIsolation({ mode: 'auto', workRoot, jail: { network: 'none', limits } });
      if (process.getuid?.() !== 0) return expect(choice.kind).toBe('jail');
      expect(choice).toMatchObject({
        kind: 'unavailable',
        reason: expect.stringMatching(/cannot be reached by other users .* Set AGENTQ_DATA_DIR/),
      });
      const refused = await bashTool.run({ command: 'echo hi' }, { ...context, isolation: choice });
      expect(refused).toEqual({
        ok: false,
        output: expect.stringMatching(
          /^bash is disabled on this worker: it runs code only inside a jail, and the jail cannot run here/,
        ),
      });
      await expect(chooseIsolation({ mode: 'bwrap', workRoot, jail: { network: 'none', limits } })).rejects.toThrow(
        /AGENTQ_SANDBOX=bwrap, but the jail cannot run here/,
      );
    } finally {
      await rm(blocked, { recursive: true, force: true });
    }
  });

  it('binds no interpreter whose folder would hold the data folder', async () => {
    // A python under a prefix of its own (pyenv, a tarball): its jail binds the prefix whole.
    const prefix = await mkdtemp(path.join(tmpdir(), 'agentq-prefix-'));
    const python = path.join(prefix, 'bin', 'python3');
    try {
      await chmod(prefix, 0o755);
      await mkdir(path.dirname(python));
      await writeFile(python, '', { mode: 0o755 });
      const jailWith = (hidden: string[]) =>
        new Jail({ network: 'none', limits, interpreters: { ...resolveInterpreters(), python }, hidden });
      const plain = jailWith([]);
      expect(plain.interpreters.python).toBe(python);
      await plain.close();
      // Its data folder inside that prefix: the system's python instead (or none, saying why).
      const guarded = jailWith([path.join(prefix, 'data')]);
      if (guarded.interpreters.python) expect(guarded.interpreters.python).toMatch(/^\/usr\//);
      else
        expect(guarded.unavailable.python).toMatch(
          /its folder .*agentq-prefix-\w+ holds .*data, which no jail may see/,
        );
      await guarded.close();
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });

  it('none is the explicit opt-out', async () => {
    expect(await chooseIsolation({ mode: 'none', workRoot: root, jail: { network: 'none', limits } })).toEqual({
      kind: 'none',
    });
  });
});

describe('the egress network', () => {
  const asRoot = process.getuid?.() === 0;

  it.skipIf(!asRoot)('reaches the internet, never this host, its loopback or private ranges', async () => {
    await withPublicServer('198.51.100', async (address, port) => {
      const egress = await chooseIsolation({
        mode: 'bwrap',
        workRoot: root,
        jail: { network: 'egress', limits, separateProcess: true },
      });
      expect(egress.kind).toBe('jail');
      const local = createServer((socket) => socket.end('reached the host'));
      await new Promise<void>((resolve) => local.listen(0, '0.0.0.0', resolve));
      const localPort = (local.address() as AddressInfo).port;
      try {
        const probe = (target: string, targetPort: number) =>
          `(exec 3<>/dev/tcp/${target}/${targetPort} && timeout 2 cat <&3 || echo "refused ${target}") 2>/dev/null`;
        const result = await bash(
          [
            probe(address, port),
            probe('127.0.0.1', localPort),
            probe('198.51.100.1', localPort),
            probe('10.0.2.2', localPort),
            probe('169.254.169.254', 80),
            probe('192.168.1.1', 80),
            probe('10.1.2.3', 80),
            'grep nameserver /etc/resolv.conf',
          ].join('; '),
          { isolation: egress, timeoutMs: 20_000 },
        );
        expect(result.output).toMatch(/^from the internet$/m);
        expect(result.output).not.toMatch(/reached the host/);
        for (const target of ['127.0.0.1', '198.51.100.1', '10.0.2.2', '169.254.169.254', '192.168.1.1', '10.1.2.3']) {
          expect(result.output).toContain(`refused ${target}`);
        }
        expect(result.output).toMatch(/nameserver 10\.0\.2\.3/);
        // slirp4netns, which parses every packet as root, runs under its own seccomp filter with fewer capabilities.
        const running = bash('sleep 2', { isolation: egress });
        await expect
          .poll(() => processesMatching('slirp4netns --configure').length, { timeout: 5_000 })
          .toBeGreaterThan(0);
        const [slirp] = processesMatching('slirp4netns --configure');
        const status = await readFile(`/proc/${slirp!.split(' ')[0]}/status`, 'utf8');
        expect(status).toMatch(/^Seccomp:\s+2$/m);
        expect(status).not.toMatch(/^CapEff:\s+000001ffffffffff$/m);
        await running;
        // Every address this host has is refused (here its own public-looking one).
        expect(egressRules()).toMatch(/ip daddr 198\.51\.100\.1 reject/);
      } finally {
        local.close();
        if (egress.kind === 'jail') await egress.jail.close();
      }
    });
  });

  it('with network none the same call reaches nothing', async () => {
    const result = await bash('(exec 3<>/dev/tcp/198.51.100.2/18080 && echo reached) 2>&1; echo done');
    expect(result.output).toMatch(/Network is unreachable|Connection refused/);
    expect(result.output).not.toMatch(/reached/);
  });
});

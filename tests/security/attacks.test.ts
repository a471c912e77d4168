/**
 * A task's code, attacking. Each attack is a task the wire double asks tool calls for, run through the
 * real loop by a real worker process with the default settings (the jail on, no network), against a
 * Redis of its own that wants a password (so REDIS_URL with credentials is exercised too). Every
 * attack must be refused or contained, and nothing it starts may outlive its tool call.
 */
import type { TaskView } from '@agentq/contract';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type DoubleToolCall, type OpenAIDouble } from '@agentq/llm';
import { freePort } from '../setup/redis-server.js';
import { processesMatching, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { waitForEnd, type SseMessage } from '../helpers/sse.js';

const CANARY = 'sk-attack-canary-0123456789';
const PASSWORD = `redis-pw-${process.pid}-${Date.now()}`;
const marker = `7${Date.now() % 1_000_000}`;

let redisServer: ChildProcess;
let redisPort: number;
let redisUrl: string;
let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;
let env: Record<string, string>;
let victim: { id: string; workdir: string };

/** Each attack: the tool calls the model asks for, by the task's prompt. */
const attacks = new Map<string, DoubleToolCall[]>();
const firstUser = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResultsIn = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

beforeAll(async () => {
  redisPort = await freePort();
  redisServer = spawn(
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', PASSWORD],
    { stdio: 'ignore' },
  );
  redisUrl = `redis://:${PASSWORD}@127.0.0.1:${redisPort}`;
  const probe = new Redis(redisUrl, { retryStrategy: (times) => (times > 100 ? null : 20) });
  probe.on('error', () => undefined);
  await probe.ping();
  probe.disconnect();

  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResultsIn(request) === 0 && attacks.has(firstUser(request)),
        reply: (request) => ({ toolCalls: attacks.get(firstUser(request))! }),
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-attacks-'));
  env = {
    PORT: String(await freePort()),
    REDIS_URL: redisUrl,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    OPENAI_API_KEY: CANARY,
    AGENTQ_MODEL: 'attacker',
    AGENTQ_CONCURRENCY: '8',
    // The search of the whole jail (`find /`, about 150,000 entries of /usr and the interpreters) took
    // over 15 s once with the rest of the suite running on the same 2 cores.
    AGENTQ_TOOL_TIMEOUT_MS: '45000',
    // Smaller than the default (4 GiB), so that filling it takes a moment and little of this machine's disk.
    AGENTQ_TASK_DISK_MB: '64',
  };
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'coder'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/coder tools: bubblewrap jail/);

  attacks.set('victim', [{ name: 'write_file', arguments: { path: 'secret.txt', content: 'the victim secret' } }]);
  const [id] = await submit(['victim']);
  await waitForEnd(baseUrl, id!);
  victim = { id: id!, workdir: path.join(dataDir, 'work', id!) };
}, 60_000);

afterAll(async () => {
  await Promise.all([api, worker].filter(Boolean).map((process) => process.stop('SIGKILL')));
  await double?.close();
  redisServer?.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

async function submit(prompts: string[]): Promise<string[]> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: prompts.map((prompt) => ({ prompt, agent: 'coder' })) }),
  });
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

/** Runs attacks as tasks at once; answers each one's tool outputs, in order. */
async function attack(named: Record<string, DoubleToolCall[]>): Promise<Record<string, string[]>> {
  for (const [name, calls] of Object.entries(named)) attacks.set(name, calls);
  const names = Object.keys(named);
  const ids = await submit(names);
  const ends = await Promise.all(ids.map((id) => waitForEnd(baseUrl, id)));
  return Object.fromEntries(names.map((name, index) => [name, outputs(ends[index]!)]));
}

function outputs(events: SseMessage[]): string[] {
  return events
    .filter((event) => event.event === 'tool.result')
    .map((event) => String((event.data.data as { output?: unknown }).output ?? ''));
}

const bash = (command: string): DoubleToolCall => ({ name: 'bash', arguments: { command } });
const unreachable = /Connection refused|Network is unreachable|Could not connect|No route to host/;

describe('a task attacking from its jail, with the default settings', () => {
  it('cannot reach Redis, the API or anything else on this host, password or not', async () => {
    const apiPort = env.PORT!;
    const results = await attack({
      'redis by /dev/tcp': [
        bash(
          `exec 3<>/dev/tcp/127.0.0.1/${redisPort} && printf 'AUTH ${PASSWORD}\\r\\nFLUSHALL\\r\\n' >&3 && timeout 2 cat <&3; echo "rc=$?"`,
        ),
      ],
      'redis by redis-cli': [
        bash(
          `redis-cli -p ${redisPort} -a ${PASSWORD} --no-auth-warning FLUSHALL 2>&1; redis-cli -p ${redisPort} -a ${PASSWORD} --no-auth-warning DEL task:${victim.id} 2>&1`,
        ),
      ],
      'the API port': [
        bash(
          `(exec 3<>/dev/tcp/127.0.0.1/${apiPort} && printf 'GET /v1/tasks HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 2 cat <&3) 2>&1; echo "rc=$?"`,
        ),
      ],
    });
    expect(results['redis by /dev/tcp']![0]).toMatch(unreachable);
    expect(results['redis by /dev/tcp']![0]).not.toMatch(/\+OK/);
    expect(results['redis by redis-cli']![0]).toMatch(unreachable);
    expect(results['the API port']![0]).toMatch(unreachable);
    expect(results['the API port']![0]).not.toMatch(/HTTP\/1/);
    // Nothing was wiped: the victim task is still there.
    const task = (await (await fetch(`${baseUrl}/v1/tasks/${victim.id}`)).json()) as TaskView;
    expect(task.status).toBe('completed');
  });

  it('cannot reach this host with http_fetch either, by any name or address the host has', async () => {
    const apiPort = env.PORT!;
    // Every address this machine has (its loopback and its interfaces'), and its name.
    const addresses = Object.values(networkInterfaces())
      .flat()
      .map((entry) => entry!.address.split('%')[0]!);
    const urls = [
      ...addresses.map((address) => `http://${address.includes(':') ? `[${address}]` : address}:${apiPort}/v1/tasks`),
      `http://localhost:${apiPort}/v1/tasks`,
      `http://[::ffff:127.0.0.1]:${redisPort}/`,
    ];
    const results = await attack({
      'http_fetch this host': urls.map((url) => ({ name: 'http_fetch', arguments: { url } })),
    });
    const refusals = results['http_fetch this host']!;
    expect(refusals).toHaveLength(urls.length);
    for (const [index, output] of refusals.entries())
      expect(output, urls[index]).toMatch(
        /^Refused: .* is a private or local address \(.+\); http_fetch only reaches the public web\.$/,
      );
  });

  it("sees no secret: not the worker's environment, not /etc/shadow, not another task's files", async () => {
    const results = await attack({
      environ: [
        bash(
          'tr "\\0" "\\n" </proc/$PPID/environ; tr "\\0" "\\n" </proc/1/environ; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; env',
        ),
      ],
      shadow: [
        bash(
          'cat /etc/shadow 2>&1; ls /root /home 2>&1; ls /etc/ssl/private 2>&1; echo "evil::0:0::/:/bin/bash" >> /etc/passwd 2>&1; grep -c evil /etc/passwd',
        ),
      ],
      'another task': [
        bash(
          `cat ${victim.workdir}/secret.txt 2>&1; echo "--- listing"; ls ${path.dirname(victim.workdir)} 2>&1; find / -name secret.txt 2>/dev/null; echo searched`,
        ),
        { name: 'read_file', arguments: { path: `${victim.workdir}/secret.txt` } },
        { name: 'read_file', arguments: { path: `../${victim.id}/secret.txt` } },
      ],
    });
    const environ = results.environ![0]!;
    expect(environ).toMatch(/HOME=/);
    expect(environ).not.toContain(CANARY);
    expect(environ).not.toContain(PASSWORD);
    expect(environ).not.toMatch(/OPENAI|REDIS_URL|AGENTQ_/);
    expect(results.shadow![0]).toMatch(/cat: \/etc\/shadow: No such file or directory/);
    // The jail's /etc is a read-only copy of a few entries: no private keys, no writing a user in.
    expect(results.shadow![0]).toMatch(/ls: cannot access '\/etc\/ssl\/private': No such file or directory/);
    // (stdout and stderr arrive on two pipes: their lines' order is not fixed)
    expect(results.shadow![0]).toMatch(/\/etc\/passwd: (Permission denied|Read-only file system)$/m);
    expect(results.shadow![0]).toMatch(/^0$/m);
    const [shell, absolute, relative] = results['another task']!;
    expect(shell).not.toContain('the victim secret');
    expect(shell).toMatch(/secret\.txt: No such file or directory/);
    // The work directories' folder shows this task's own directory only.
    expect(shell!.split('--- listing')[1]).not.toContain(victim.id);
    expect(shell).toMatch(/--- listing\n[\w-]+\nsearched$/);
    expect(absolute).toMatch(/Refused: .* is outside the task's work directory/);
    expect(relative).toMatch(/Refused: .* is outside the task's work directory/);
  }, 60_000);

  it('cannot write outside through a dangling link, a link swapped in after a check, or a hard link', async () => {
    const planted = path.join(dataDir, 'planted.txt');
    const results = await attack({
      'dangling link': [
        bash(`ln -s ${planted} dl && ln -s ../../planted-too.txt dl2 && ls -l dl dl2 | wc -l`),
        { name: 'write_file', arguments: { path: 'dl', content: 'owned' } },
        { name: 'write_file', arguments: { path: 'dl2', content: 'owned' } },
      ],
      'swapped link': [
        // A loop that keeps turning sub/ into a link out and back, left running for the file tool's turn.
        bash(
          `mkdir -p sub; (while true; do rm -rf sub; ln -sfn ${dataDir} sub; rm -f sub; mkdir -p sub; done) >/dev/null 2>&1 & sleep 0.3; echo racing`,
        ),
        ...Array.from({ length: 10 }, () => ({
          name: 'write_file',
          arguments: { path: 'sub/pwned.txt', content: 'owned' },
        })),
      ],
      'hard link': [
        bash(`ln ${victim.workdir}/secret.txt hl 2>&1; ln /etc/passwd hl2 2>&1; ls`),
        { name: 'read_file', arguments: { path: 'hl2' } },
      ],
    });
    expect(existsSync(planted)).toBe(false);
    expect(existsSync(path.join(dataDir, 'planted-too.txt'))).toBe(false);
    expect(results['dangling link']!.slice(1)).toEqual([
      expect.stringMatching(/^Refused: "dl" is outside/),
      expect.stringMatching(/^Refused: "dl2" is outside/),
    ]);
    // The swapping loop did not outlive its call: every write landed inside, none outside.
    expect(existsSync(path.join(dataDir, 'pwned.txt'))).toBe(false);
    // Each write landed inside, or was refused when the loop had left sub/ a link out when it died.
    for (const output of results['swapped link']!.slice(1))
      expect(output).toMatch(
        /^(Wrote 5 bytes to sub\/pwned\.txt|Refused: "sub\/pwned\.txt" is outside the task's work directory.*)$/,
      );
    const [links, read] = results['hard link']!;
    expect(links).toMatch(/ln: failed to access '.*secret\.txt': No such file or directory/);
    expect(links).toMatch(
      /ln: failed to create hard link 'hl2' => '\/etc\/passwd': (Invalid cross-device link|Operation not permitted)/,
    );
    expect(read).toMatch(/No such file/);
    expect(await readFile(path.join(victim.workdir, 'secret.txt'), 'utf8')).toBe('the victim secret');
  });

  it('cannot hold the worker with a FIFO the file tools open (they check and open on its thread)', async () => {
    const results = await attack({
      fifo: [
        bash('mkfifo pipe && mkdir -p d && mkfifo d/pipe2 && ls -l pipe d/pipe2 | cut -c1'),
        { name: 'read_file', arguments: { path: 'pipe' } },
        { name: 'write_file', arguments: { path: 'd/pipe2', content: 'x' } },
        { name: 'edit_file', arguments: { path: 'pipe', old_text: 'a', new_text: 'b' } },
      ],
      // Alongside, on the same worker: it goes on.
      neighbour: [{ name: 'write_file', arguments: { path: 'ok.txt', content: 'fine' } }],
    });
    expect(results.fifo![0]!.trim().split('\n')).toEqual(['p', 'p']);
    expect(results.fifo!.slice(1)).toEqual([
      expect.stringMatching(/"pipe" is not a regular file/),
      expect.stringMatching(/"d\/pipe2" is not a regular file/),
      expect.stringMatching(/"pipe" is not a regular file/),
    ]);
    expect(results.neighbour).toEqual(['Wrote 4 bytes to ok.txt']);
  });

  it('leaves nothing running after its tool call, and has no capability', async () => {
    const results = await attack({
      'setsid and nohup': [
        bash(
          `setsid sleep ${marker}1 & nohup sleep ${marker}2 >/dev/null 2>&1 & (sleep ${marker}3 &) ; sleep 0.3; echo started`,
        ),
      ],
      capabilities: [bash('grep CapEff /proc/self/status; mknod dev-null c 1 3 2>&1; echo "mknod=$?"; id')],
    });
    expect(results['setsid and nohup']![0]).toBe('started');
    await expect.poll(() => processesMatching(`sleep ${marker}`), { timeout: 3_000 }).toEqual([]);
    expect(results.capabilities![0]).toMatch(/CapEff:\s+0000000000000000/);
    expect(results.capabilities![0]).toMatch(/mknod: dev-null: Operation not permitted\nmknod=1/);
    expect(results.capabilities![0]).toMatch(/uid=1000\(agentq\)/);
  });

  it('a fork bomb and 2 GB of memory end as tool errors, and the worker goes on', async () => {
    const results = await attack({
      // Its `sleep` starts before the bomb, and the shell waits for it with a builtin: a `sleep` started
      // after needs a fork, which bash retries for up to 31 s (1, 2, 4, 8, 16) while the bomb holds every
      // slot: it once outlasted the test's 30 s.
      'fork bomb': [bash(`sleep 2 & waiter=$!; :(){ :|:& };: ; wait $waiter; echo "the shell is still here"`)],
      memory: [{ name: 'python', arguments: { code: 'x = bytearray(2 * 1024 ** 3)\nprint("allocated 2 GB")' } }],
    });
    expect(results['fork bomb']![0]).toMatch(/the jail's limit of 128 processes was reached/);
    expect(results.memory![0]).toMatch(/MemoryError/);
    expect(results.memory![0]).not.toMatch(/allocated 2 GB/);
    // The worker survived both and still runs tasks.
    expect((await attack({ after: [bash('echo still serving')] })).after).toEqual(['still serving']);
  });

  it('cannot hold more memory than its run may, in shared maps, memfd files or its tmpfs, whatever its OOM score', async () => {
    const python = (code: string): DoubleToolCall => ({ name: 'python', arguments: { code } });
    const results = await attack({
      // As found from outside: 1.5 GiB of shared anonymous memory, every page touched (VmData 4.7 MB).
      'shared map': [
        python(
          'import mmap\nm = mmap.mmap(-1, 1536 << 20)\nfor i in range(0, 1536 << 20, 4096): m[i] = 1\nprint("held")',
        ),
      ],
      // 2 GiB in four memfd files of 512 MiB (the file size limit).
      memfd: [
        python(
          'import os\nfds = [os.memfd_create("x") for _ in range(4)]\nfor fd in fds:\n    for _ in range(16): os.write(fd, b"x" * (32 << 20))\nprint("held")',
        ),
      ],
      // Its score lowered (which only a worker with CAP_SYS_RESOURCE can forbid), then 1,000 MiB in /dev/shm
      // and /tmp (each within its 512 MiB) and 100 MiB of heap: the rest of its shell is ended too (its 8 s sleep: slack for a loaded machine).
      'tmpfs and score': [
        bash(
          'echo 0 > /proc/self/oom_score_adj; grep memory /proc/self/cgroup; head -c 500M /dev/zero > /dev/shm/a; head -c 500M /dev/zero > /tmp/b; python3 -c "x = bytearray(100 << 20)"; sleep 8; echo held',
        ),
      ],
    });
    for (const [name, [output]] of Object.entries(results)) {
      expect(output, name).not.toMatch(/held/);
      expect(output, name).toMatch(
        /\[killed: the tool's processes used all of their 1024\.0 MiB of memory together \(files in \/tmp and \/dev\/shm count too\)/,
      );
    }
    // Its run's group, inside the group all tool runs share (bounded below the machine's memory).
    expect(results['tmpfs and score']![0]).toMatch(/memory:\/agentq\/\d+\/run-\d+/);
    expect((await attack({ after: [bash('echo still serving')] })).after).toEqual(['still serving']);
  });

  // The numbers are x86_64's.
  it.skipIf(process.arch !== 'x64')(
    'cannot reach the kernel through io_uring, userfaultfd, bpf, perf events, keys, ptrace or new namespaces',
    async () => {
      const probe = [
        'import ctypes',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'params = ctypes.create_string_buffer(120)',
        'for name, nr, *args in [("io_uring_setup", 425, 1, params), ("userfaultfd", 323, 0), ("bpf", 321, 0, 0, 0), ("perf_event_open", 298, 0, 0, -1, -1, 0), ("keyctl", 250, 0, 0), ("ptrace", 101, 0, 0, 0, 0), ("unshare", 272, 0), ("clone", 56, 0x10000000, 0, 0, 0, 0)]:',
        '    result = libc.syscall(nr, *args)',
        '    print(name, "refused" if result == -1 and ctypes.get_errno() == 1 else f"gave {result}")',
      ].join('\n');
      const results = await attack({ syscalls: [{ name: 'python', arguments: { code: probe } }] });
      expect(results.syscalls![0]!.split('\n')).toEqual(
        ['io_uring_setup', 'userfaultfd', 'bpf', 'perf_event_open', 'keyctl', 'ptrace', 'unshare', 'clone'].map(
          (name) => `${name} refused`,
        ),
      );
    },
  );

  it("cannot fill the disk: its tool is stopped at the task's disk quota, and the task can delete and go on", async () => {
    const results = await attack({
      // A file at a time, each within the file size limit; 300 MiB at most, should the quota fail; paced, so
      // that the quota's looks (100 ms apart) see it grow (a burst between two looks is the overshoot allowed).
      'fill the disk': [
        bash('for i in $(seq 1 300); do head -c 1M /dev/zero > part-$i; sleep 0.01; done; echo finished'),
        { name: 'write_file', arguments: { path: 'more.txt', content: 'more' } },
        bash('rm part-*; echo cleaned'),
      ],
    });
    const [filled, written, cleaned] = results['fill the disk']!;
    expect(filled).toMatch(
      /\[stopped: the work directory holds [\d.]+ MiB in \d+ entries; its quota is 64\.0 MiB and 200000 entries\. Delete what you no longer need \(rm\), then go on in smaller steps\]$/,
    );
    expect(filled).not.toMatch(/finished/);
    expect(written).toMatch(/^Not written: the work directory holds/);
    // Started past its quota, the clean-up could only delete, and is told it is under it again.
    expect(cleaned).toMatch(
      /^cleaned\n\[the work directory was past its quota when this started, so this run could only delete: .* It is under it now: the next call may write again\.\]$/,
    );
  });

  it('cannot ratchet past its quota a run at a time: a run that starts past it may only delete', async () => {
    // As found from outside with entries (four runs of 100,000 files against 200,000, each allowed what
    // its folder held when it started); here with bytes, which this suite's 64 MiB quota makes light:
    // four runs of 40 MiB, each quicker than the quota's looks. The entry case: jail.test.ts.
    const make = (name: string) => bash(`head -c 40M /dev/zero > ${name}; echo made ${name}`);
    const results = await attack({ ratchet: [make('a'), make('b'), make('c'), make('d')] });
    const [, , third, fourth] = results.ratchet!;
    for (const run of [third!, fourth!]) {
      expect(run).toMatch(/File size limit exceeded|File too large/);
      expect(run).toMatch(/\[the work directory was past its quota when this started, so this run could only delete/);
    }
    // What it holds: the first two runs' files at most, nothing of the last two.
    const workdir = path.dirname(
      execFileSync('find', [path.join(dataDir, 'work'), '-maxdepth', '2', '-name', 'b', '-type', 'f'], {
        encoding: 'utf8',
      }).trim(),
    );
    const held = Number(execFileSync('du', ['-s', '-B1', workdir], { encoding: 'utf8' }).split('\t')[0]);
    expect(held).toBeLessThanOrEqual(81 * 1024 * 1024);
    for (const name of ['c', 'd']) {
      const size = existsSync(path.join(workdir, name)) ? statSync(path.join(workdir, name)).size : 0;
      expect(size, name).toBe(0);
    }
  });

  it("cannot hide what it writes from the quota below folders nested past a path's length", async () => {
    const level = 'd'.repeat(20);
    const results = await attack({
      // 300 levels (past 4,096 bytes of path, where a walk by path cannot go), then 150 MiB at most below.
      'hide deep': [
        bash(
          `for i in $(seq 300); do mkdir ${level} && cd ${level} || exit 1; done; for i in $(seq 1 150); do head -c 1M /dev/zero > part-$i; sleep 0.01; done; echo finished`,
        ),
        bash(`rm -r ${level}; echo cleaned`),
      ],
    });
    // Walked by descriptors, what is below is counted like the rest.
    expect(results['hide deep']![0]).toMatch(
      /\[stopped: the work directory holds [\d.]+ MiB in \d+ entries; its quota is 64\.0 MiB/,
    );
    expect(results['hide deep']![0]).not.toMatch(/finished/);
    expect(results['hide deep']![1]).toMatch(
      /^cleaned\n\[the work directory was past its quota when this started, so this run could only delete: .* It is under it now/,
    );
  });

  it('cannot hide what it writes from the quota in a file it deleted and keeps open, even from a process that left its session', async () => {
    const results = await attack({
      // 150 MiB at most, written by a process of a session of its own to a file deleted at once, and held
      // open: a burst freed within one look (100 ms) leaves nothing behind, so the file is kept a while.
      'hide open': [
        bash(
          "setsid bash -c 'exec 3>hidden; rm hidden; for i in $(seq 1 150); do head -c 1M /dev/zero >&3; done; sleep 10' & wait; echo finished",
        ),
        bash('ls -A; echo listed'),
      ],
    });
    expect(results['hide open']![0]).toMatch(
      /\[stopped: the work directory's processes hold [\d.]+ MiB in files they deleted but keep open \(their disk is freed only when closed; the quota is 64\.0 MiB\): close them, or write to files you keep\. /,
    );
    expect(results['hide open']![0]).not.toMatch(/finished/);
    expect(results['hide open']![1]).toBe('listed');
  });

  it('leaves no orphan when its worker is killed mid-tool', async () => {
    attacks.set('long tool', [bash(`sleep ${marker}9`)]);
    const [id] = await submit(['long tool']);
    await expect.poll(() => processesMatching(`sleep ${marker}9`).length, { timeout: 15_000 }).toBeGreaterThan(0);
    await worker.stop('SIGKILL');
    await expect.poll(() => processesMatching(`sleep ${marker}9`), { timeout: 3_000 }).toEqual([]);
    expect(id).toBeDefined();
  });
});

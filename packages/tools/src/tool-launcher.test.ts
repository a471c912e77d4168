/**
 * The tool launcher: jailed processes start from it, not from the worker; it dies with the worker and
 * takes every tool process with it; a launcher that dies fails its calls and is started again.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, processesMatching } from '../../../tests/helpers/processes.js';
import { bashTool } from './bash-tool.js';
import { ToolError } from './errors.js';
import { Jail, type JailRunOptions } from './jail.js';
import { chooseIsolation, closeIsolation } from './process-isolation.js';

const limits = { processes: 64, memoryMb: 512, fileMb: 64, cpuSeconds: 20 };
let root: string;
let workdir: string;
let jail: Jail;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-launcher-'));
  // A root worker's jails run as a uid of their own, which must reach the work directory.
  await chmod(root, 0o711);
  workdir = path.join(root, 'task');
  process.env.AGENTQ_TEST_LAUNCHER_SECRET = 'sk-launcher-leak';
  jail = new Jail({ network: 'none', limits, separateProcess: true });
  delete process.env.AGENTQ_TEST_LAUNCHER_SECRET;
  await jail.prepareWorkdir(workdir);
});
afterAll(async () => {
  await jail.close();
  await rm(root, { recursive: true, force: true });
});

const run = (command: string, overrides: Partial<JailRunOptions> = {}) =>
  jail.run({
    program: 'bash',
    command,
    workdir,
    timeoutMs: 20_000,
    outputLimit: 8_000,
    signal: new AbortController().signal,
    ...overrides,
  });

/** The parent pid of a process, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Waits until a jailed command line with `text` in it runs, and returns its bubblewrap's pid. */
async function bwrapRunning(text: string): Promise<number> {
  const bwrap = () => processesMatching(text).filter((line) => /^\d+ \S*bwrap /.test(line));
  await expect.poll(() => bwrap().length, { timeout: 10_000 }).toBeGreaterThan(0);
  // bubblewrap forks once: the first is the one its launcher started.
  return Math.min(...bwrap().map((line) => Number(line.split(' ')[0])));
}

describe('the tool launcher', () => {
  it("starts jailed processes itself: bubblewrap is its child, not this process's, and it has no secret of this process", async () => {
    expect(await run('echo jailed; id -u')).toMatchObject({ exitCode: 0, output: 'jailed\n1000\n' });
    const marker = `81${Math.floor(Math.random() * 1e6)}`;
    const controller = new AbortController();
    const running = run(`sleep ${marker}`, { signal: controller.signal });
    const launcher = parentOf(await bwrapRunning(`sleep ${marker}`));
    expect(launcher).not.toBe(process.pid);
    expect(parentOf(launcher)).toBe(process.pid);
    const environment = readFileSync(`/proc/${launcher}/environ`, 'utf8').split('\0').filter(Boolean);
    // A PATH and TMPDIR, and what Node gives a child it talks to (its channel's descriptor and format).
    expect(environment.map((entry) => entry.split('=')[0]).sort()).toEqual([
      'NODE_CHANNEL_FD',
      'NODE_CHANNEL_SERIALIZATION_MODE',
      'PATH',
      'TMPDIR',
    ]);
    // A cancel reaches the process through the launcher (it sleeps for days: only a kill ends it).
    controller.abort();
    expect(await running).toMatchObject({ cancelled: true });
    expect(processesMatching(`sleep ${marker}`)).toEqual([]);
  });

  it('fails the calls of a launcher that died, with what to do, and starts another for the next call', async () => {
    const marker = `82${Math.floor(Math.random() * 1e6)}`;
    const running = run(`sleep ${marker}`);
    const launcher = parentOf(await bwrapRunning(`sleep ${marker}`));
    // Its temporary files (its jail's /etc) are in a folder of its own.
    const scratch = readFileSync(`/proc/${launcher}/environ`, 'utf8')
      .split('\0')
      .find((entry) => entry.startsWith('TMPDIR='))!
      .slice('TMPDIR='.length);
    expect(readdirSync(scratch).some((name) => name.startsWith('agentq-jail-'))).toBe(true);
    process.kill(launcher, 'SIGKILL');
    const error = await running.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({
      code: 'tool_unavailable',
      message: expect.stringMatching(/tool launcher ended \(SIGKILL\) while the process ran; .* try again/),
    });
    // bubblewrap's --die-with-parent: the jail ended with its launcher.
    await expect.poll(() => processesMatching(`sleep ${marker}`), { timeout: 5_000 }).toEqual([]);
    // Killed, it removed nothing; the worker removed its folder.
    await expect.poll(() => existsSync(scratch)).toBe(false);
    expect(await run('echo again')).toMatchObject({ exitCode: 0, output: 'again\n' });
  });

  it('fails only its own calls when it ends, not those of the launcher started after it', async () => {
    const marker = `84${Math.floor(Math.random() * 1e6)}`;
    const first = run(`sleep ${marker}`);
    const launcher = parentOf(await bwrapRunning(`sleep ${marker}`));
    // The first launcher is held (stopped) while it is being closed: the next call starts another.
    process.kill(launcher, 'SIGSTOP');
    const closing = jail.close();
    const second = run(`: ${marker}-second; sleep 1; echo second`);
    await bwrapRunning(`${marker}-second`);
    // The first one ends while the second one runs a call.
    process.kill(launcher, 'SIGKILL');
    await closing;
    expect(
      await first.then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).toMatchObject({
      code: 'tool_unavailable',
      message: expect.stringMatching(/ended \(SIGKILL\) while the process ran/),
    });
    expect(await second).toMatchObject({ exitCode: 0, output: 'second\n' });
    await expect.poll(() => processesMatching(`sleep ${marker}`), { timeout: 5_000 }).toEqual([]);
  });

  it('ends with its worker, killed or not, and takes every tool process with it', async () => {
    const marker = `83${Math.floor(Math.random() * 1e6)}`;
    const tools = new URL('../dist/index.js', import.meta.url).href;
    // A worker of its own: starts a long jailed call, and is killed while it runs.
    const script = `
      import { Jail } from ${JSON.stringify(tools)};
      const jail = new Jail({ network: 'none', limits: ${JSON.stringify(limits)}, separateProcess: true });
      void jail.run({ program: 'bash', command: 'sleep ${marker}', workdir: ${JSON.stringify(workdir)}, timeoutMs: 60000, outputLimit: 1000, signal: new AbortController().signal });
    `;
    const worker = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
    const launcher = parentOf(await bwrapRunning(`sleep ${marker}`));
    expect(parentOf(launcher)).toBe(worker.pid);
    worker.kill('SIGKILL');
    await expect
      .poll(() => [isAlive(launcher), processesMatching(`sleep ${marker}`)], { timeout: 5_000 })
      .toEqual([false, []]);
  });

  it('keeps no worker alive once its calls are done', async () => {
    const tools = new URL('../dist/index.js', import.meta.url).href;
    const script = `
      import { Jail } from ${JSON.stringify(tools)};
      const jail = new Jail({ network: 'none', limits: ${JSON.stringify(limits)}, separateProcess: true });
      const outcome = await jail.run({ program: 'bash', command: 'echo done', workdir: ${JSON.stringify(workdir)}, timeoutMs: 10000, outputLimit: 1000, signal: new AbortController().signal });
      process.stdout.write(outcome.output);
    `;
    const worker = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    worker.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // It ends by itself (the test's timeout would catch one held up by the launcher's channel).
    expect(await new Promise((resolve) => worker.once('exit', resolve))).toBe(0);
    expect(output).toBe('done\n');
  });

  it('starts the unjailed processes of a worker that opted out of the jail too, and ends them with it', async () => {
    const unjailed = await chooseIsolation({
      mode: 'none',
      workRoot: root,
      jail: { network: 'none', limits, separateProcess: true },
    });
    try {
      const context = {
        workdir,
        signal: new AbortController().signal,
        timeoutMs: 10_000,
        outputLimit: 2_000,
        isolation: unjailed,
      };
      const { output } = await bashTool.run({ command: 'echo $PPID' }, context);
      expect(Number(output)).not.toBe(process.pid);
      expect(parentOf(Number(output))).toBe(process.pid);
    } finally {
      await closeIsolation(unjailed);
    }
    // A worker of its own, killed while its unjailed tool runs: the tool does not outlive it.
    const marker = `85${Math.floor(Math.random() * 1e6)}`;
    const tools = new URL('../dist/index.js', import.meta.url).href;
    const script = `
      import { bashTool, chooseIsolation } from ${JSON.stringify(tools)};
      const isolation = await chooseIsolation({ mode: 'none', workRoot: ${JSON.stringify(root)}, jail: { network: 'none', limits: ${JSON.stringify(limits)}, separateProcess: true } });
      void bashTool.run({ command: 'sleep ${marker}' }, { workdir: ${JSON.stringify(workdir)}, signal: new AbortController().signal, timeoutMs: 60000, outputLimit: 1000, isolation });
    `;
    const worker = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
    const sleeping = () => processesMatching(`sleep ${marker}`).filter((line) => /^\d+ sleep /.test(line));
    await expect.poll(() => sleeping().length, { timeout: 10_000 }).toBe(1);
    worker.kill('SIGKILL');
    await expect.poll(sleeping, { timeout: 5_000 }).toEqual([]);
  });
});

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bashTool } from './bash-tool.js';
import { nodeTool } from './node-tool.js';
import { bwrapAvailable } from './process-sandbox.js';
import { pythonTool } from './python-tool.js';
import type { ToolContext } from './tool.js';

let workdir: string;
let context: ToolContext;
beforeAll(() => {
  if (!bwrapAvailable()) throw new Error('The sandbox tests need bubblewrap: apt-get install -y bubblewrap');
});
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-jail-'));
  context = { workdir, signal: new AbortController().signal, timeoutMs: 10_000, outputLimit: 4_000, sandbox: 'bwrap' };
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

describe('the bubblewrap sandbox', () => {
  it('runs bash, python and node with the work directory writable', async () => {
    expect(await bashTool.run({ command: 'pwd; echo made > out.txt' }, context)).toEqual({ ok: true, output: workdir });
    expect(await readFile(path.join(workdir, 'out.txt'), 'utf8')).toBe('made\n');
    expect(await pythonTool.run({ code: 'print(open("out.txt").read().strip(), 6 * 7)' }, context)).toEqual({ ok: true, output: 'made 42' });
    expect(await nodeTool.run({ code: 'console.log(require("fs").readdirSync(".").join(","))' }, context)).toEqual({ ok: true, output: 'out.txt' });
  });

  it('shows none of the rest of the machine, and no system file can be changed', async () => {
    const result = await bashTool.run(
      { command: `ls /home 2>&1; cat /root/.bashrc 2>&1; cat /etc/shadow 2>&1; ls ${path.dirname(workdir)} | wc -l; touch /usr/evil 2>&1; echo ok` },
      context,
    );
    expect(result.output).toMatch(/ls: cannot access '\/home': No such file or directory/);
    expect(result.output).toMatch(/cat: \/root\/\.bashrc: No such file or directory/);
    expect(result.output).toMatch(/cat: \/etc\/shadow: No such file or directory/);
    // The work directory's parent holds only the work directory itself.
    expect(result.output).toMatch(/\n1\n/);
    expect(result.output).toMatch(/touch: cannot touch '\/usr\/evil': Read-only file system/);
  });

  it('still kills the whole tree on timeout', async () => {
    const started = Date.now();
    const result = await bashTool.run({ command: 'sleep 30 & sleep 30; wait' }, { ...context, timeoutMs: 300 });
    expect(result.output).toMatch(/timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

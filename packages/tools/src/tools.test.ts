import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../../tests/helpers/processes.js';
import { bashTool } from './bash-tool.js';
import { nodeTool } from './node-tool.js';
import { capOutput } from './cap-output.js';
import { editFileTool } from './edit-file-tool.js';
import { pythonTool } from './python-tool.js';
import { readFileTool } from './read-file-tool.js';
import type { ToolContext } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

let workdir: string;
let context: ToolContext;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-tools-'));
  // Unjailed here: these tests are about the tools; jail.test.ts runs them jailed.
  context = { workdir, signal: new AbortController().signal, timeoutMs: 10_000, outputLimit: 2_000, isolation: { kind: 'none' } };
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

describe('process tools', () => {
  it('bash succeeds by exit status, whatever the output says', async () => {
    expect(await bashTool.run({ command: 'echo "0 failed, error: none"' }, context)).toEqual({ ok: true, output: '0 failed, error: none' });
    const failed = await bashTool.run({ command: 'echo all good; exit 3' }, context);
    expect(failed).toEqual({ ok: false, output: 'all good\n[exit status 3]' });
  });

  it('runs in the work directory', async () => {
    await bashTool.run({ command: 'echo data > made-here.txt' }, context);
    expect(await readFile(path.join(workdir, 'made-here.txt'), 'utf8')).toBe('data\n');
  });

  it('never passes API keys or the Redis URL to tool processes', async () => {
    const env = toolEnvironment({ workdir, parent: { PATH: '/usr/bin:/bin', OPENAI_API_KEY: 'sk-secret', REDIS_URL: 'redis://x', AWS_SECRET_ACCESS_KEY: 'a' } });
    expect(Object.keys(env).sort()).toEqual(['HOME', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'PYTHONUNBUFFERED', 'TERM', 'TMPDIR']);
    process.env.AGENTQ_TEST_SECRET_KEY = 'leak';
    try {
      const result = await bashTool.run({ command: 'env' }, context);
      expect(result.output).not.toContain('leak');
      expect(result.output).not.toContain('OPENAI_API_KEY');
    } finally {
      delete process.env.AGENTQ_TEST_SECRET_KEY;
    }
  });

  it('kills the whole process tree on timeout', async () => {
    const started = Date.now();
    const result = await bashTool.run({ command: 'sleep 30 & echo $! > child.pid; wait' }, { ...context, timeoutMs: 300 });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/timed out after 300 ms and was killed/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const childPid = Number(await readFile(path.join(workdir, 'child.pid'), 'utf8'));
    // The shell's background child got the signal too (a zombie waiting to be reaped counts as dead).
    await expect.poll(() => isAlive(childPid), { timeout: 2_000 }).toBe(false);
  });

  it('kills the running process when cancelled', async () => {
    const controller = new AbortController();
    const running = pythonTool.run({ code: 'import time\nprint("start", flush=True)\ntime.sleep(30)' }, { ...context, signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const result = await running;
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/cancelled/);
  });

  it('caps long output, keeping head and tail with a marker', async () => {
    const result = await pythonTool.run({ code: 'for i in range(10000): print(f"line {i}")' }, context);
    expect(result.ok).toBe(true);
    expect(result.output.startsWith('line 0\nline 1\n')).toBe(true);
    expect(result.output.endsWith('line 9999')).toBe(true);
    expect(result.output).toMatch(/\[\.\.\. \d+ characters omitted \.\.\.\]/);
    expect(result.output.length).toBeLessThan(2_100);
    expect(capOutput('abcdefghij', 4)).toBe('ab\n\n[... 6 characters omitted ...]\n\nij');
  });

  it('python reports the traceback and failure of a program that raises', async () => {
    const result = await pythonTool.run({ code: 'raise ValueError("bad value")' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/ValueError: bad value\n\[exit status 1\]$/);
  });
});

describe('file tools', () => {
  it('read_file numbers lines and pages with offset and limit', async () => {
    await writeFile(path.join(workdir, 'f.txt'), 'a\nb\nc\nd');
    const result = await readFileTool.run({ path: 'f.txt', offset: 2, limit: 2 }, context);
    expect(result).toEqual({ ok: true, output: '     2\tb\n     3\tc\n(1 more lines)' });
  });

  it('edit_file replaces a unique match, and says how many matches otherwise', async () => {
    await writeFile(path.join(workdir, 'f.txt'), 'x = 1\ny = 1\n');
    expect(await editFileTool.run({ path: 'f.txt', old_text: '1', new_text: '2' }, context)).toEqual({
      ok: false,
      output: 'old_text matches 2 places in f.txt. Include more surrounding lines so it matches once, or set replace_all to true.',
    });
    expect((await editFileTool.run({ path: 'f.txt', old_text: 'y = 1', new_text: 'y = $&2' }, context)).ok).toBe(true);
    expect(await readFile(path.join(workdir, 'f.txt'), 'utf8')).toBe('x = 1\ny = $&2\n');
    expect((await editFileTool.run({ path: 'f.txt', old_text: 'zzz', new_text: '' }, context)).output).toMatch(/was not found/);
  });
});

describe('node', () => {
  it('node runs a program and reports by exit status', async () => {
    expect(await nodeTool.run({ code: 'console.log(21 * 2)' }, context)).toEqual({ ok: true, output: '42' });
    const failed = await nodeTool.run({ code: 'throw new Error("boom")' }, context);
    expect(failed.ok).toBe(false);
    expect(failed.output).toMatch(/Error: boom[\s\S]*\[exit status 1\]$/);
  });

});

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../../tests/helpers/processes.js';
import { bashTool, MAX_COMMAND_BYTES } from './bash-tool.js';
import { nodeTool } from './node-tool.js';
import { capOutput } from './cap-output.js';
import { editFileTool } from './edit-file-tool.js';
import { pythonTool } from './python-tool.js';
import { readFileTool } from './read-file-tool.js';
import { writeFileTool } from './write-file-tool.js';
import type { ToolContext } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

let workdir: string;
let context: ToolContext;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-tools-'));
  // Unjailed here: these tests are about the tools; jail.test.ts runs them jailed.
  context = {
    workdir,
    signal: new AbortController().signal,
    timeoutMs: 10_000,
    outputLimit: 2_000,
    isolation: { kind: 'none' },
  };
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

describe('process tools', () => {
  it('bash succeeds by exit status, whatever the output says', async () => {
    expect(await bashTool.run({ command: 'echo "0 failed, error: none"' }, context)).toEqual({
      ok: true,
      output: '0 failed, error: none',
    });
    const failed = await bashTool.run({ command: 'echo all good; exit 3' }, context);
    expect(failed).toEqual({ ok: false, output: 'all good\n[exit status 3]' });
  });

  it('runs in the work directory', async () => {
    await bashTool.run({ command: 'echo data > made-here.txt' }, context);
    expect(await readFile(path.join(workdir, 'made-here.txt'), 'utf8')).toBe('data\n');
  });

  it('never passes API keys or the Redis URL to tool processes', async () => {
    const env = toolEnvironment({
      workdir,
      parent: {
        PATH: '/usr/bin:/bin',
        OPENAI_API_KEY: 'sk-secret',
        REDIS_URL: 'redis://x',
        AWS_SECRET_ACCESS_KEY: 'a',
      },
    });
    expect(Object.keys(env).sort()).toEqual([
      'HOME',
      'PATH',
      'PYTHONDONTWRITEBYTECODE',
      'PYTHONUNBUFFERED',
      'TERM',
      'TMPDIR',
    ]);
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
    // The shell waits for a child that sleeps for days: only killing the tree returns.
    const result = await bashTool.run(
      { command: 'sleep 600000 & echo $! > child.pid; wait' },
      { ...context, timeoutMs: 300 },
    );
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/timed out after 300 ms and was killed/);
    const childPid = Number(await readFile(path.join(workdir, 'child.pid'), 'utf8'));
    // The shell's background child got the signal too (a zombie waiting to be reaped counts as dead).
    await expect.poll(() => isAlive(childPid), { timeout: 2_000 }).toBe(false);
  });

  it('kills the running process when cancelled', async () => {
    const controller = new AbortController();
    const running = pythonTool.run(
      { code: 'import time\nprint("start", flush=True)\ntime.sleep(30)' },
      { ...context, signal: controller.signal },
    );
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

  it('refuses a bash command longer than a command line holds, saying how to run it instead', async () => {
    // E.g. a heredoc of a big file: as `bash -c <command>` it could not start (spawn E2BIG).
    const command = `cat > big.txt <<'EOF'\n${'x'.repeat(200_000)}\nEOF`;
    const refused = await bashTool.run({ command }, context);
    expect(refused).toEqual({
      ok: false,
      output: `The command is 200026 bytes, more than one command line holds (${MAX_COMMAND_BYTES} bytes), so it did not run. Write the script to a file with write_file and run it with \`bash script.sh\`.`,
    });
    // One at the cap still runs (jail.test.ts runs one jailed, behind the jail's prelude).
    const atCap = `echo ${'y'.repeat(MAX_COMMAND_BYTES - 13)} | wc -c`;
    expect(Buffer.byteLength(atCap)).toBe(MAX_COMMAND_BYTES);
    expect(await bashTool.run({ command: atCap }, context)).toEqual({
      ok: true,
      output: String(MAX_COMMAND_BYTES - 12),
    });
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
      output:
        'old_text matches 2 places in f.txt. Include more surrounding lines so it matches once, or set replace_all to true.',
    });
    expect((await editFileTool.run({ path: 'f.txt', old_text: 'y = 1', new_text: 'y = $&2' }, context)).ok).toBe(true);
    expect(await readFile(path.join(workdir, 'f.txt'), 'utf8')).toBe('x = 1\ny = $&2\n');
    expect((await editFileTool.run({ path: 'f.txt', old_text: 'zzz', new_text: '' }, context)).output).toMatch(
      /was not found/,
    );
  });

  it('write_file replaces a longer file whole, and the file tools read and write past 1 MiB whole', async () => {
    await writeFile(path.join(workdir, 'f.txt'), 'a much longer first content\n');
    expect((await writeFileTool.run({ path: 'f.txt', content: 'short\n' }, context)).ok).toBe(true);
    expect(await readFile(path.join(workdir, 'f.txt'), 'utf8')).toBe('short\n');
    // Past 1 MiB the contents go through libuv's threads (workdir-files.ts), in parts.
    const line = (index: number) => `line ${index} ${'x'.repeat(60)}\n`;
    const big = Array.from({ length: 40_000 }, (_, index) => line(index)).join('');
    expect(big.length).toBeGreaterThan(2 * 1024 * 1024);
    expect((await writeFileTool.run({ path: 'big/f.txt', content: big }, context)).ok).toBe(true);
    expect(await readFile(path.join(workdir, 'big/f.txt'), 'utf8')).toBe(big);
    const read = await readFileTool.run({ path: 'big/f.txt', offset: 39_999, limit: 2 }, context);
    expect(read.output.split('\n').slice(0, 2)).toEqual([
      ` 39999\t${line(39_998).trimEnd()}`,
      ` 40000\t${line(39_999).trimEnd()}`,
    ]);
    expect((await editFileTool.run({ path: 'big/f.txt', old_text: line(39_999), new_text: 'end\n' }, context)).ok).toBe(
      true,
    );
    expect(await readFile(path.join(workdir, 'big/f.txt'), 'utf8')).toBe(`${big.slice(0, -line(39_999).length)}end\n`);
  });

  it('read_file shows lines up to the output limit, then says where to read on', async () => {
    // 3 million lines and 2, all but the first and the last empty: walked, never split into an array.
    await writeFile(path.join(workdir, 'many.txt'), `first\n${'\n'.repeat(3_000_000)}last`);
    const result = await readFileTool.run({ path: 'many.txt', limit: 10_000_000 }, context);
    expect(result.ok).toBe(true);
    const [, shownText, rest, offset] =
      /^([\s\S]*)\n\((\d+) more lines: the output limit is reached; read on with offset (\d+)\)$/.exec(result.output) ??
      [];
    expect(shownText!.length).toBeLessThanOrEqual(context.outputLimit);
    expect(shownText!.split('\n')[0]).toBe('     1\tfirst');
    expect(Number(offset) - 1 + Number(rest)).toBe(3_000_002);
    const next = await readFileTool.run({ path: 'many.txt', offset: Number(offset), limit: 1 }, context);
    expect(next.output).toBe(`${String(offset).padStart(6)}\t\n(${Number(rest) - 1} more lines)`);
    expect((await readFileTool.run({ path: 'many.txt', offset: 3_000_002 }, context)).output).toBe('3000002\tlast');
    expect((await readFileTool.run({ path: 'many.txt', offset: 3_000_003 }, context)).output).toBe(
      '(many.txt has 3000002 lines; nothing at line 3000003)',
    );
    // One line longer than the limit is shown cut to it.
    await writeFile(path.join(workdir, 'wide.txt'), `${'w'.repeat(10_000)}\nnext`);
    const wide = await readFileTool.run({ path: 'wide.txt' }, context);
    expect(wide.output).toMatch(
      /^ {5}1\tw+\n\n\[\.\.\. \d+ characters omitted \.\.\.\]\n\nw+\n\(1 more lines: the output limit is reached; read on with offset 2\)$/,
    );
  });

  it('edit_file replaces every match when asked, within bounds it checks before building the new text', async () => {
    await writeFile(path.join(workdir, 'f.txt'), 'a-a-a');
    expect(
      await editFileTool.run({ path: 'f.txt', old_text: 'a', new_text: 'bb', replace_all: true }, context),
    ).toEqual({ ok: true, output: 'Replaced 3 occurrence(s) in f.txt' });
    expect(await readFile(path.join(workdir, 'f.txt'), 'utf8')).toBe('bb-bb-bb');
    // 200,001 one-character matches: refused, and the file is left as it was.
    const many = 'a'.repeat(200_001);
    await writeFile(path.join(workdir, 'many.txt'), many);
    expect(
      await editFileTool.run({ path: 'many.txt', old_text: 'a', new_text: 'b', replace_all: true }, context),
    ).toEqual({
      ok: false,
      output:
        'old_text matches more than 100000 places in many.txt; replace_all changes at most 100000. Match fewer (a longer old_text), or make a change this wide with bash (sed, python).',
    });
    expect(await readFile(path.join(workdir, 'many.txt'), 'utf8')).toBe(many);
    // 1,000 matches that would each become 20,000 bytes: 20 MB, over the 16 MiB an edit may make.
    await writeFile(path.join(workdir, 'small.txt'), 'x'.repeat(1_000));
    expect(
      await editFileTool.run(
        { path: 'small.txt', old_text: 'x', new_text: 'y'.repeat(20_000), replace_all: true },
        context,
      ),
    ).toEqual({
      ok: false,
      output:
        'The edit would make small.txt 20000000 bytes, more than 16777216: write a file that large with bash (python), in parts.',
    });
    expect(await readFile(path.join(workdir, 'small.txt'), 'utf8')).toBe('x'.repeat(1_000));
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

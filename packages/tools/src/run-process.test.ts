import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { runProcess } from './run-process.js';

const run = (file: string, args: string[], extra: { input?: string } = {}) =>
  runProcess({
    file,
    args,
    cwd: tmpdir(),
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 10_000,
    outputLimit: 10_000,
    signal: new AbortController().signal,
    ...extra,
  });

describe('runProcess', () => {
  it('gives stdout and stderr together, the exit status, and reads stdin', async () => {
    const outcome = await run('/bin/bash', ['-c', 'read line; echo "out $line"; echo "err $line" >&2; exit 3'], {
      input: 'hello\n',
    });
    expect(outcome.exitCode).toBe(3);
    expect(outcome.output).toContain('out hello\n');
    expect(outcome.output).toContain('err hello\n');
    expect(outcome).toMatchObject({ timedOut: false, cancelled: false });
  });

  it('a program that cannot start says why, as its output', async () => {
    const outcome = await run('/nonexistent/program', []);
    expect(outcome.exitCode).toBeUndefined();
    expect(outcome.output).toMatch(/^could not start \/nonexistent\/program: spawn \/nonexistent\/program ENOENT/);
  });

  it('waits for every byte of a large output before it answers', async () => {
    const outcome = await run('/bin/bash', ['-c', 'head -c 300000 /dev/zero | tr "\\0" x; echo; echo done']);
    expect(outcome.exitCode).toBe(0);
    // Capped to the limit, head and tail kept: the last line, written last, is the end of the tail.
    expect(outcome.output).toMatch(/\ndone\n$/);
  });
});

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { removeWorkdir } from './remove-workdir.js';

it('removes a work directory whose task nested folders past what a path can name', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'agentq-remove-'));
  const dir = path.join(root, 'task');
  const level = 'd'.repeat(20);
  execFileSync('bash', [
    '-c',
    `mkdir "$0" && cd "$0" && for i in $(seq 300); do mkdir ${level} && cd ${level} || exit 1; done; echo deep > file`,
    dir,
  ]);
  try {
    await removeWorkdir(dir);
    expect(existsSync(dir)).toBe(false);
    // Gone already: nothing to do.
    await removeWorkdir(dir);
  } finally {
    execFileSync('rm', ['-rf', root]);
  }
});

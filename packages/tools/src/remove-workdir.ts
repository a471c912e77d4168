/**
 * Removes a task's work directory when its task is deleted or its retention ends. A task can nest
 * folders past what a path can name (4,096 bytes), where Node's `rm` fails (it goes by path): then
 * `rm -rf`, which goes by descriptor, so that no task can make its folder outlive it.
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function removeWorkdir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENAMETOOLONG') throw error;
    await run('rm', ['-rf', '--', dir]);
  }
}

/**
 * The files a task was given on submit, placed in its folder as the folder is made (a subtask gets its
 * root's). The folder is made whole or not at all: the files are written into a staging folder beside
 * it (`<work>/.placing/<taskId>/<run>`), each through the file tools' own checks (openInWorkdir) and
 * owned by the user the task's jailed tools run as, then the staging folder is renamed into place in one
 * step. So a task's folder, once there, holds every file; an attempt cut short (an error, a worker
 * killed between two files) leaves only a staging folder, which the next attempt removes and does
 * again. A file that cannot be placed fails the attempt with an error that names it: the task never
 * runs without its files.
 */
import { UnrecoverableError } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { chownSync, closeSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { openInWorkdir, removeWorkdir, replaceContent, ToolError, type HostIdentity } from '@agentq/tools';

/** Where a task's files are gathered before its folder is renamed into place; removed with the task. */
export function placingFolderOf(workdir: string): string {
  return path.join(path.dirname(workdir), '.placing', path.basename(workdir));
}

/** What every attempt would meet again: the task fails at once rather than after its retries. */
const EVERY_TIME = new Set(['ENAMETOOLONG', 'EISDIR', 'ENOTDIR', 'ELOOP', 'EINVAL']);

/**
 * Makes `workdir` with the task's files in it; answers how many. Call it only while `workdir` is not
 * there: a folder that is there holds them all already.
 * @example await placeInputs({ files: await inputFiles(store, record.rootId), given: record.inputs, workdir })
 */
export async function placeInputs(options: {
  /** The files as stored with the task's root (`inputFiles`). */
  files: ReadonlyArray<{ path: string; content: Buffer }>;
  /** How many files the task was given (its record's `inputs`): fewer stored is a failure, not a run without them. */
  given: number;
  workdir: string;
  /** Who owns the folder and its files: the user its jailed tools run as (default: the worker's). */
  owner?: HostIdentity | undefined;
  /** The folder's mode: a jail keeps each task's folder to its own user (0o700). Default 0o777 less the umask. */
  mode?: number | undefined;
}): Promise<number> {
  const { files, workdir, owner } = options;
  if (files.length !== options.given)
    throw new UnrecoverableError(
      `The task was given ${options.given} input files, but ${files.length} are stored: it does not run without them. Submit it again with its files.`,
    );
  // What an attempt cut short left (its own staging folder, or another run's that lost the task).
  const placing = placingFolderOf(workdir);
  await removeWorkdir(placing);
  const staging = path.join(placing, randomUUID());
  mkdirSync(placing, { recursive: true, mode: 0o700 });
  mkdirSync(staging, { mode: options.mode ?? 0o777 });
  if (owner) chownSync(staging, owner.uid, owner.gid);
  for (const input of files) {
    try {
      const file = await openInWorkdir({
        workdir: staging,
        path: input.path,
        access: 'write',
        ...(owner ? { owner } : {}),
      });
      try {
        await replaceContent(file, input.content);
      } finally {
        closeSync(file);
      }
    } catch (error) {
      // Cleaning up after a failure: the placing error is the one thrown; a folder left is removed by the sweep.
      await removeWorkdir(placing).catch(() => undefined);
      throw notPlaced(input.path, error);
    }
  }
  try {
    renameSync(staging, workdir);
  } catch (error) {
    // Another run of the task made it meanwhile, whole as this one would have.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
  }
  await removeWorkdir(placing);
  return files.length;
}

/** The error that ends the attempt: the file named, and what the disk said (without the host's paths). */
function notPlaced(file: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException).code;
  // A system error's message names the host's path after its comma: its code and words only.
  const said =
    error instanceof ToolError || !code
      ? String((error as Error).message ?? error)
      : (error as Error).message.split(',')[0];
  const message = `The input file ${JSON.stringify(file)} could not be placed in the task's folder (${said}); the task does not run without it.`;
  return error instanceof ToolError || (code !== undefined && EVERY_TIME.has(code))
    ? new UnrecoverableError(`${message} Submit it under another path.`)
    : new Error(message, { cause: error });
}

/**
 * A task's files: what its folder holds, one file, or all of it as a .tar.gz. Read from the work volume
 * the workers write to (AGENTQ_DATA_DIR, which the API must see and, the folders being each task's own
 * user's, read as root), only for the task's own tenant. Never a link out of the folder (workdir-export.ts, openInWorkdir), and every
 * download is an attachment with a sandboxing policy: a browser never shows what a task wrote as a page.
 */
import { closeSync, createReadStream, fstatSync, type ReadStream } from 'node:fs';
import path from 'node:path';
import { Router, type Response } from 'express';
import type { TaskRecord, TaskStore } from '@agentq/store';
import { ToolError } from '@agentq/tools/errors';
import { archiveWorkdir, listWorkdir } from '@agentq/tools/workdir-export';
import { openInWorkdir } from '@agentq/tools/workdir-files';
import { principalOf } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { taskIdOf, visibleRecord } from './tasks.js';

export function filesRouter(options: {
  store: TaskStore;
  /** A task's folder on the work volume (config's taskWorkdir). */
  workdirOf: (taskId: string) => string;
}): Router {
  const router = Router();
  const folderOf = options.workdirOf;

  router.get('/v1/tasks/:id/files', async (request, response) => {
    const record = await visibleRecord(options.store, principalOf(response), taskIdOf(request));
    const listed = await listWorkdir(folderOf(record.id)).catch(unreadable(record));
    if (!listed.exists) notHere(record);
    response.json({ files: listed.files, truncated: listed.truncated });
  });

  router.get('/v1/tasks/:id/files.tar.gz', async (request, response) => {
    const record = await visibleRecord(options.store, principalOf(response), taskIdOf(request));
    attachment(response, `${record.id}.tar.gz`, 'application/gzip');
    // Headers go out with the first bytes: a failure after them can only cut the archive short.
    await archiveWorkdir(folderOf(record.id), response).catch((error: unknown) => {
      if (!response.headersSent) {
        unannounce(response);
        unreadable(record)(error);
      }
      response.destroy(error as Error);
    });
  });

  router.get('/v1/tasks/:id/files/*path', async (request, response) => {
    const record = await visibleRecord(options.store, principalOf(response), taskIdOf(request));
    const wanted = ([] as string[]).concat(request.params.path as string | string[]).join('/');
    const file = await openInWorkdir({ workdir: folderOf(record.id), path: wanted, access: 'read' }).catch(
      (error: unknown) => {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EISDIR')
          throw new ApiError(
            'invalid_request',
            `"${wanted}" is a folder: GET /v1/tasks/${record.id}/files lists its files, /files.tar.gz downloads them all.`,
          );
        // A name past the disk's bounds (a part over 255 bytes, a path over 4,096): no file has it.
        if (code === 'ENAMETOOLONG')
          throw new ApiError(
            'invalid_request',
            `No file can have the path "${wanted.slice(0, 200)}": each part of a path is at most 255 bytes (UTF-8), and the whole at most 4,096.`,
          );
        // Missing, outside the folder, a link out, a hard link, not a regular file: none is served.
        if (error instanceof ToolError || code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP')
          throw new ApiError('not_found', `Task "${record.id}" has no file "${wanted.slice(0, 200)}" to download.`);
        throw error;
      },
    );
    // The stream owns the descriptor once made: it closes it after any read under way (a number closed
    // under a read could be another file's by then).
    let stream: ReadStream | undefined;
    try {
      const { size } = fstatSync(file);
      attachment(response, path.basename(wanted), 'application/octet-stream');
      response.setHeader('content-length', String(size));
      if (size === 0) {
        response.end();
        return;
      }
      const reading = createReadStream('', { fd: file, start: 0, end: size - 1 });
      stream = reading;
      // A running task may cut the file short while it is read: the answer must not end as if whole.
      let sent = 0;
      reading.on('data', (chunk) => (sent += chunk.length));
      await new Promise<void>((resolve, reject) => {
        reading.on('error', reject);
        reading.on('end', () => {
          if (sent === size) response.end();
          else if (!response.headersSent) reject(changedWhileRead(response, record, wanted));
          // Some of it went out under a length it will not reach: cut, so the client knows it is not whole.
          else response.destroy();
        });
        response.on('close', resolve);
        reading.pipe(response, { end: false });
      });
    } finally {
      if (stream) stream.destroy();
      else closeSync(file);
    }
  });

  return router;
}

/** A download: saved, never rendered (no type sniffed, no script, no plugin, nothing fetched). */
function attachment(response: Response, name: string, type: string): void {
  response.setHeader('content-type', type);
  response.setHeader('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(name)}`);
  response.setHeader('x-content-type-options', 'nosniff');
  response.setHeader('content-security-policy', "default-src 'none'; sandbox");
  response.setHeader('cache-control', 'private, no-store');
}

/** Answered as an error after all: not as the attachment announced. */
function unannounce(response: Response): void {
  for (const header of ['content-disposition', 'content-type', 'content-security-policy', 'content-length'])
    response.removeHeader(header);
}

/** A file its task cut short before any of it went out: a 409, to ask again. */
function changedWhileRead(response: Response, record: TaskRecord, wanted: string): ApiError {
  unannounce(response);
  return new ApiError(
    'conflict',
    `Task "${record.id}"'s file "${wanted.slice(0, 200)}" changed while it was read (its task is rewriting it): ask again, or once the task has ended.`,
  );
}

/** A folder this API's user may not read (a jailed task's, 0700, to an API that is not root): said. */
function unreadable(record: TaskRecord) {
  return (error: unknown): never => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM')
      throw new ApiError(
        'conflict',
        `Task "${record.id}"'s folder is not readable by the API's user: the jail keeps each task's folder to its own user, so the API reads it as root (as \`agentq start\` runs it) or not at all.`,
      );
    throw error;
  };
}

/**
 * A task whose folder this API does not see: none yet (it is made when a tool first needs it), which
 * lists as empty, or one on a volume this API does not mount, which is said.
 */
function notHere(record: TaskRecord): void {
  if (record.workdirEntries || record.inputs)
    throw new ApiError(
      'conflict',
      `Task "${record.id}" has files, but not on this API's AGENTQ_DATA_DIR: give the API the workers' work volume.`,
    );
}

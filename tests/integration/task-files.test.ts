/**
 * Files in and out through the real API and worker: files given on submit are in the task's folder
 * before its first step (a planned task's subtasks get them too); what its tools wrote is listed,
 * downloaded byte for byte and as a .tar.gz; nothing leads out of the folder, and a tenant reaches
 * only its own tasks' files.
 */
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import { afterEach, describe, expect, it } from 'vitest';
import { tenantsEnv } from '../helpers/config-file.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool');
const lastToolResult = (request: DoubleRequest) => String(toolResults(request).at(-1)?.content ?? '');
const b64 = (content: Buffer | string) => Buffer.from(content).toString('base64');
let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

/** Every file of a .tar.gz, by name. */
async function untar(body: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const reader = extract();
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on('end', () => {
      if (header.type === 'file') files.set(header.name, Buffer.concat(chunks));
      next();
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    reader.on('finish', () => resolve());
    reader.on('error', reject);
  });
  Readable.from([body]).pipe(createGunzip()).pipe(reader);
  await done;
  return files;
}

/** A GET of a raw path (no URL normalisation on the way: `%2e%2e` reaches the server as written). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    httpRequest({ host: url.hostname, port: url.port, path, headers }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    })
      .on('error', reject)
      .end();
  });
}

describe('files in and out', () => {
  it("places the given files before the first step, and serves what the task's tools wrote", async () => {
    const blob = randomBytes(70_000);
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request).length === 0,
          reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'data/in.txt' } }] },
        },
        {
          match: (request) => toolResults(request).length === 1,
          reply: {
            toolCalls: [
              {
                name: 'bash',
                arguments: {
                  command:
                    'mkdir -p out && cp data/blob.bin out/copy.bin && printf made > out/note.txt && ln -s /etc/passwd out/leak && ln -s .. out/up',
                },
              },
            ],
          },
        },
        { reply: { content: 'done' } },
      ],
    });
    const [taskId] = await stack.submit([
      {
        prompt: 'work on the files',
        agent: 'coder',
        files: [
          { path: 'data/in.txt', content: b64('hello input') },
          { path: 'data/blob.bin', content: b64(blob) },
        ],
      },
    ]);
    await waitForEnd(stack.api.url, taskId!);
    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(task.status).toBe('completed');
    // The first tool call read the given file.
    const second = stack.double.requests.find((request) => toolResults(request).length === 1)!;
    expect(lastToolResult(second)).toContain('hello input');

    const { body: listed } = await getJson<{ files: Array<{ path: string; size: number }> }>(
      `${stack.api.url}/v1/tasks/${taskId}/files`,
    );
    // Links (out/leak, out/up) are not files of the folder.
    expect(listed.files.map(({ path, size }) => [path, size])).toEqual([
      ['data/blob.bin', blob.length],
      ['data/in.txt', 11],
      ['out/copy.bin', blob.length],
      ['out/note.txt', 4],
    ]);

    const download = await fetch(`${stack.api.url}/v1/tasks/${taskId}/files/out/copy.bin`);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(blob)).toBe(true);
    expect(download.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''copy.bin");
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-security-policy')).toContain('sandbox');

    const archive = await fetch(`${stack.api.url}/v1/tasks/${taskId}/files.tar.gz`);
    expect(archive.headers.get('content-type')).toBe('application/gzip');
    const files = await untar(Buffer.from(await archive.arrayBuffer()));
    expect([...files.keys()].sort()).toEqual(['data/blob.bin', 'data/in.txt', 'out/copy.bin', 'out/note.txt']);
    expect(files.get('out/copy.bin')!.equals(blob)).toBe(true);
    expect(files.get('out/note.txt')!.toString()).toBe('made');

    // Nothing leads out: a link to a file outside, a link to the folder above, `..` in the path.
    const base = `/v1/tasks/${taskId}/files`;
    for (const path of [`${base}/out/leak`, `${base}/out/up/${taskId}/data/in.txt`, `${base}/%2e%2e/%2e%2e/etc/passwd`])
      expect(await rawGet(stack.api.url, path), path).toBe(404);
    expect((await fetch(`${stack.api.url}${base}/out`)).status).toBe(400);
    expect((await fetch(`${stack.api.url}${base}/nothing.txt`)).status).toBe(404);

    // The files count against the tenant's bytes.
    const { body: usage } = await getJson<{ writtenBytes: number }>(`${stack.api.url}/v1/usage`);
    expect(usage.writtenBytes).toBeGreaterThan(blob.length);
  });

  it("gives a planned task's subtasks their root's files", async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request).length === 0 && (request.tools?.length ?? 0) > 3,
          reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'spec.md' } }] },
        },
        { reply: { content: 'summed up' } },
      ],
    });
    const [taskId] = await stack.submit([
      {
        prompt: 'use the spec',
        files: [{ path: 'spec.md', content: b64('# the spec of the root') }],
        plan: [{ id: 'read', agent: 'file', task: 'read spec.md' }],
      },
    ]);
    await waitForEnd(stack.api.url, taskId!);
    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    const subtask = task.children![0]!.id;
    const read = stack.double.requests.find((request) => toolResults(request).length === 1)!;
    expect(lastToolResult(read)).toContain('# the spec of the root');
    const { body: listed } = await getJson<{ files: Array<{ path: string }> }>(
      `${stack.api.url}/v1/tasks/${subtask}/files`,
    );
    expect(listed.files.map((file) => file.path)).toEqual(['spec.md']);
  });

  it('refuses bad files with what to fix, and stores nothing', async () => {
    stack = await startStack({ pools: [] });
    const submit = async (files: unknown) => {
      const response = await fetch(`${stack!.api.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tasks: [{ prompt: 'x', agent: 'coder', files }] }),
      });
      return {
        status: response.status,
        details: ((await response.json()) as { error?: { details?: Array<{ path: string; message: string }> } }).error
          ?.details,
      };
    };
    const cases: Array<[unknown, string, RegExp]> = [
      [[{ path: '../up.txt', content: b64('x') }], 'tasks.0.files.0.path', /relative path inside/],
      [[{ path: '/etc/passwd', content: b64('x') }], 'tasks.0.files.0.path', /no leading "\/"/],
      [[{ path: 'a//b', content: b64('x') }], 'tasks.0.files.0.path', /no empty part/],
      [[{ path: 'a\u0000b', content: b64('x') }], 'tasks.0.files.0.path', /NUL/],
      [[{ path: 'a.txt', content: 'not base64!' }], 'tasks.0.files.0.content', /base64/],
      [
        [
          { path: 'a', content: b64('x') },
          { path: 'a/b', content: b64('y') },
        ],
        'tasks.0.files.1.path',
        /inside "a", which is given as a file/,
      ],
      [
        [
          { path: 'a', content: b64('x') },
          { path: 'a', content: b64('y') },
        ],
        'tasks.0.files.1.path',
        /given twice/,
      ],
      // Names in bytes: 128 "é" are 128 characters and 256 bytes, past what a file name may hold.
      [
        [{ path: `data/${'é'.repeat(128)}`, content: b64('x') }],
        'tasks.0.files.0.path',
        /^"é{128}" \(in "data\/é{128}"\) is 256 bytes in UTF-8: a file or folder name may be at most 255 bytes/,
      ],
      [
        [{ path: Array.from({ length: 103 }, () => 'f'.repeat(9)).join('/'), content: b64('x') }],
        'tasks.0.files.0.path',
        /is 1029 bytes in UTF-8: a path may be at most 1024 bytes; give it a shorter path$/,
      ],
      // One name in two Unicode forms (NFC and NFD) is one file.
      [
        [
          { path: 'caf\u00e9.txt', content: b64('x') },
          { path: 'cafe\u0301.txt', content: b64('y') },
        ],
        'tasks.0.files.1.path',
        /given twice, as "café.txt" too \(the same name in another Unicode form\)/,
      ],
      [
        [
          { path: 'caf\u00e9', content: b64('x') },
          { path: 'cafe\u0301/in.txt', content: b64('y') },
        ],
        'tasks.0.files.1.path',
        /inside "café", which is given as a file: a name is a file or a folder, not both/,
      ],
      [[{ path: 'big.bin', content: b64(Buffer.alloc(5 * 1024 * 1024 + 1)) }], 'tasks.0.files', /more than 5242880/],
      [[{ path: 'a', content: b64('x'), mode: 'x' }], 'tasks.0.files.0', /unknown field "mode"/],
    ];
    for (const [files, path, message] of cases) {
      const answer = await submit(files);
      expect(answer.status, path).toBe(400);
      expect(answer.details, JSON.stringify(files).slice(0, 80)).toEqual([
        { path, message: expect.stringMatching(message) },
      ]);
    }
    const { body } = await getJson<{ tasks: unknown[] }>(`${stack.api.url}/v1/tasks`);
    expect(body.tasks).toEqual([]);
  });

  it("refuses files past the task's disk quota", async () => {
    stack = await startStack({ pools: [], env: { AGENTQ_TASK_DISK_MB: '1' } });
    const response = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        tasks: [
          { prompt: 'x', agent: 'coder', files: [{ path: 'big.bin', content: b64(Buffer.alloc(1024 * 1024 + 1)) }] },
        ],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { details: Array<{ path: string; message: string }> } };
    expect(body.error.details).toEqual([
      { path: 'tasks.0.files', message: expect.stringContaining('AGENTQ_TASK_DISK_MB') },
    ]);
  });

  it("closes a downloaded file's descriptor, whether read whole, empty, or cut off", async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request).length === 0,
          reply: {
            toolCalls: [
              { name: 'bash', arguments: { command: 'head -c 3000000 /dev/zero > big.bin && : > empty.txt' } },
            ],
          },
        },
        { reply: { content: 'done' } },
      ],
    });
    const [taskId] = await stack.submit([{ prompt: 'make files', agent: 'coder' }]);
    await waitForEnd(stack.api.url, taskId!);
    const files = `${stack.api.url}/v1/tasks/${taskId}/files`;
    // The API runs in this process: its open descriptors of the task's files are this process's.
    const openOf = (name: string) => {
      const file = realpathSync(path.join(stack!.dataDir, 'work', taskId!, name));
      return readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === file;
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    };
    const whole = await fetch(`${files}/big.bin`);
    expect((await whole.arrayBuffer()).byteLength).toBe(3_000_000);
    const empty = await fetch(`${files}/empty.txt`);
    expect([empty.status, await empty.text()]).toEqual([200, '']);
    // Cut off after the first bytes: the stream stops, and closes the file after the read under way.
    await new Promise<void>((resolve, reject) => {
      const url = new URL(`${files}/big.bin`);
      const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname }, (response) => {
        response.once('data', () => {
          expect(openOf('big.bin')).toBe(1);
          request.destroy();
          resolve();
        });
      }).on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
      request.end();
    });
    await expect.poll(() => openOf('big.bin'), { timeout: 5_000 }).toBe(0);
    expect(openOf('empty.txt')).toBe(0);
    // And the API serves the file again afterwards.
    expect((await (await fetch(`${files}/big.bin`)).arrayBuffer()).byteLength).toBe(3_000_000);
  });

  it("lets a tenant reach only its own tasks' files", async () => {
    stack = await startStack({
      rules: [{ reply: { content: 'ok' } }],
      env: tenantsEnv({ acme: { keys: ['acme-key'] }, other: { keys: ['other-key'] } }),
    });
    const response = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer acme-key' },
      body: JSON.stringify({
        tasks: [{ prompt: 'x', agent: 'coder', files: [{ path: 'secret.txt', content: b64('acme only') }] }],
      }),
    });
    const taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
    await waitForEnd(stack.api.url, taskId, { authorization: 'Bearer acme-key' });
    const own = await fetch(`${stack.api.url}/v1/tasks/${taskId}/files/secret.txt`, {
      headers: { authorization: 'Bearer acme-key' },
    });
    expect(await own.text()).toBe('acme only');
    for (const path of ['files', 'files/secret.txt', 'files.tar.gz']) {
      const foreign = await fetch(`${stack.api.url}/v1/tasks/${taskId}/${path}`, {
        headers: { authorization: 'Bearer other-key' },
      });
      expect(foreign.status, path).toBe(404);
    }
  });
});

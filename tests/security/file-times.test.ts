/**
 * A task's own code dates its files as it likes, and the files routes must still show them: the data
 * folder is a tmpfs here (a Kubernetes `emptyDir: {medium: Memory}`, a Docker tmpfs volume; btrfs keeps
 * the same 64-bit seconds), where `touch` can set a time millions of years away, past what a JavaScript
 * Date holds, or before year 1. Through the real API and a real worker process (jail on).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

/** Files dated in the year 3,170,843, in -3,166,904, in 2100 (past a 32-bit second count) and in 2024. */
const DATING = [
  'echo far > far.txt && touch -d @100000000000000 far.txt',
  'echo past > past.txt && touch -d @-100000000000000 past.txt',
  'echo later > later.txt && touch -d @4102444800 later.txt',
  'echo now > now.txt && touch -d @1717243200 now.txt',
  'mkdir -p old && touch -d @100000000000000 old',
  'ls -l --time-style=+%s',
].join(' && ');

const prefix = freshPrefix('file-times');
let mount: string;
let double: OpenAIDouble;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;

beforeAll(async () => {
  mount = mkdtempSync(path.join(tmpdir(), 'agentq-file-times-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0755', 'tmpfs', mount]);
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => !request.messages.some((message) => message.role === 'tool'),
        reply: { toolCalls: [{ name: 'bash', arguments: { command: DATING } }] },
      },
      { reply: { content: 'dated' } },
    ],
  });
  const env = await processEnv({
    prefix,
    dataDir: path.join(mount, 'data'),
    modelURL: double.baseURL,
    model: 'file-times',
  });
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'coder'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/coder tools: bubblewrap jail/);
}, 60_000);

afterAll(async () => {
  await Promise.all([api, worker].filter(Boolean).map((process) => process.stop('SIGKILL')));
  await double?.close();
  await deletePrefix(prefix);
  if (mount) {
    execFileSync('umount', [mount]);
    rmSync(mount, { recursive: true, force: true });
  }
});

describe('file times a task chose', () => {
  it('are listed within years 1 to 9999, and archived as they are', async () => {
    const submitted = await fetch(`${baseUrl}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: 'date your files', agent: 'coder' }] }),
    });
    const { tasks } = (await submitted.json()) as { tasks: Array<{ id: string }> };
    const id = tasks[0]!.id;
    const events = await waitForEnd(baseUrl, id);
    const dated = events.find((event) => event.event === 'tool.result')?.data.data as { output?: string } | undefined;
    // The disk holds the times the task set (tmpfs keeps them all).
    expect(dated?.output).toMatch(/ 100000000000000 far\.txt/);
    expect(dated?.output).toMatch(/ -100000000000000 past\.txt/);

    const listed = await fetch(`${baseUrl}/v1/tasks/${id}/files`);
    const list = await listed.text();
    expect([listed.status, list]).toEqual([200, expect.stringMatching(/^\{"files":/)]);
    const times = Object.fromEntries(
      (JSON.parse(list) as { files: Array<{ path: string; modifiedAt: string }> }).files.map((file) => [
        file.path,
        file.modifiedAt,
      ]),
    );
    // Past what a date can say (RFC 3339 has years 1 to 9999): the nearest it can.
    expect(times).toEqual({
      'far.txt': '9999-12-31T23:59:59.999Z',
      'past.txt': '0001-01-01T00:00:00.000Z',
      'later.txt': '2100-01-01T00:00:00.000Z',
      'now.txt': '2024-06-01T12:00:00.000Z',
    });

    // The archive says each time as it is (a pax header past what tar's own field holds).
    const archive = await fetch(`${baseUrl}/v1/tasks/${id}/files.tar.gz`);
    expect(archive.status).toBe(200);
    const entries = execFileSync('tar', ['-tzv', '--full-time'], {
      input: Buffer.from(await archive.arrayBuffer()),
      env: { TZ: 'UTC', PATH: process.env.PATH ?? '/usr/bin:/bin' },
    })
      .toString()
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/).slice(3).join(' '))
      .sort();
    expect(entries).toEqual([
      '-3166904-02-24 14:13:20 past.txt',
      '2024-06-01 12:00:00 now.txt',
      '2100-01-01 00:00:00 later.txt',
      '3170843-11-07 09:46:40 far.txt',
      '3170843-11-07 09:46:40 old',
    ]);
  });
});

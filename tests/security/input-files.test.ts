/**
 * A tenant's input files against the worker that places them, through the real API and a real worker
 * process (jail on): a name is checked in bytes at submit, and a task never runs without every file it
 * was given. The placement is cut short from outside by a disk that refuses the second file (the
 * worker's soft RLIMIT_FSIZE, set with prlimit: EFBIG, as a full disk's ENOSPC would be); a retry must
 * place them all again, or the task fails naming the file. And a path no file can have, asked of the
 * files route, is a 4xx, not a 500.
 */
import type { TaskView } from '@agentq/contract';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { freshPrefix } from '../helpers/redis.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { waitForEnd, type SseMessage } from '../helpers/sse.js';

/** What every task of this file asks its first tool call to show: the sizes of the files it was given. */
const SIZES = 'wc -c a.txt b.bin c.txt 2>&1; true';
/** Past the disk's room for one file (64 KiB), below the task's quota. */
const BIG = 100_000;

let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;

const firstUser = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResultsIn = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const b64 = (content: Buffer | string) => Buffer.from(content).toString('base64');
const threeFiles = () => [
  { path: 'a.txt', content: b64('a') },
  { path: 'b.bin', content: b64(Buffer.alloc(BIG, 1)) },
  { path: 'c.txt', content: b64('c') },
];

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResultsIn(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: SIZES } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-input-files-'));
  const env = await processEnv({
    prefix: freshPrefix('inputs'),
    dataDir,
    modelURL: double.baseURL,
    model: 'files-model',
    extra: { AGENTQ_TASK_DISK_MB: '16' },
  });
  api = spawnAgentq(['api'], env);
  worker = spawnAgentq(['worker', '--pools', 'coder'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await worker.waitFor(/coder tools: bubblewrap jail/);
}, 60_000);

afterAll(async () => {
  await Promise.all([api, worker].filter(Boolean).map((process) => process.stop('SIGKILL')));
  await double?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The disk the worker writes to refuses a file past `bytes` (a soft limit: its jails may still raise theirs). */
function limitWorkerFiles(bytes: number | 'unlimited'): void {
  execFileSync('prlimit', ['--pid', String(worker.child.pid), `--fsize=${bytes}:`]);
}

async function submit(task: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ agent: 'coder', ...task }] }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const idOf = (body: Record<string, unknown>) => (body as { tasks: Array<{ id: string }> }).tasks[0]!.id;
const eventsOf = async (id: string) => {
  const response = await fetch(`${baseUrl}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } });
  return (await response.json()) as Array<{ type: string; data: Record<string, unknown> }>;
};
/** What the task's first tool call showed of its files: the sizes `wc -c` printed. */
const sizesSeen = (events: SseMessage[]) =>
  events
    .filter((event) => event.event === 'tool.result')
    .map((event) => String((event.data.data as { output?: unknown }).output ?? ''))[0];
const modelCallsOf = (prompt: string) => double.requests.filter((request) => firstUser(request).includes(prompt));

describe("a tenant's input files", () => {
  it('are refused at submit when a name passes 255 bytes, though not 255 characters, naming the file', async () => {
    const long = 'é'.repeat(128); // 128 characters, 256 bytes: one more than a file name may hold
    const prompt = 'the 256-byte name';
    const answer = await submit({
      prompt,
      files: [
        { path: 'a.txt', content: b64('a') },
        { path: long, content: b64('lost') },
        { path: 'z.txt', content: b64('z') },
      ],
    });
    // Accepted, it ran: with what?
    const ran =
      answer.status === 202
        ? await waitForEnd(baseUrl, idOf(answer.body)).then(async (events) => {
            const task = (await (await fetch(`${baseUrl}/v1/tasks/${idOf(answer.body)}`)).json()) as TaskView;
            return `accepted (202), then ${task.status}; its first tool call saw: ${sizesSeen(events)}`;
          })
        : '';
    expect(answer.status, ran).toBe(400);
    expect((answer.body as { error: { details: unknown } }).error.details).toEqual([
      {
        path: 'tasks.0.files.1.path',
        message: expect.stringMatching(/"é+" is 256 bytes .*at most 255 bytes.*shorter name/),
      },
    ]);
    expect(modelCallsOf(prompt)).toEqual([]);
  });

  it('fail the task, naming the file, when one cannot be placed: the task never runs without it', async () => {
    const prompt = 'a disk that refuses b.bin';
    limitWorkerFiles(64 * 1024);
    try {
      const answer = await submit({ prompt, files: threeFiles() });
      expect(answer.status).toBe(202);
      const events = await waitForEnd(baseUrl, idOf(answer.body));
      const task = (await (await fetch(`${baseUrl}/v1/tasks/${idOf(answer.body)}`)).json()) as TaskView;
      expect(
        { status: task.status, modelCalls: modelCallsOf(prompt).length },
        `its first tool call saw: ${sizesSeen(events)}`,
      ).toEqual({ status: 'failed', modelCalls: 0 });
      expect(task.error?.message).toMatch(/input file "b\.bin" could not be placed.*EFBIG/);
    } finally {
      limitWorkerFiles('unlimited');
    }
  }, 60_000);

  it('are all placed again by the retry after a placement cut short after the first file', async () => {
    const prompt = 'a disk that refuses b.bin once';
    limitWorkerFiles(64 * 1024);
    let id: string;
    let retried: { data: Record<string, unknown> } | undefined;
    try {
      const answer = await submit({ prompt, files: threeFiles() });
      expect(answer.status).toBe(202);
      id = idOf(answer.body);
      // The first attempt placed a.txt, then the disk refused b.bin: the task is queued for its retry.
      await expect
        .poll(
          async () =>
            (retried = (await eventsOf(id)).find((event) => event.type === 'task.queued' && event.data.retry)),
          { timeout: 20_000 },
        )
        .toBeDefined();
    } finally {
      // The disk has room again.
      limitWorkerFiles('unlimited');
    }
    const events = await waitForEnd(baseUrl, id);
    const task = (await (await fetch(`${baseUrl}/v1/tasks/${id}`)).json()) as TaskView;
    // Its first step saw every file whole: the retry placed them all, not only what the first left.
    expect(sizesSeen(events)).toMatch(new RegExp(`^\\s*1 a\\.txt\\n\\s*${BIG} b\\.bin\\n\\s*1 c\\.txt\\n`));
    expect(task.status).toBe('completed');
    // Why it was tried again, in its events: the file, and what the disk said.
    expect(retried?.data.reason).toMatch(/input file "b\.bin" could not be placed.*EFBIG/);
    const listed = (await (await fetch(`${baseUrl}/v1/tasks/${id}/files`)).json()) as {
      files: Array<{ path: string; size: number }>;
    };
    expect(listed.files.map(({ path, size }) => [path, size])).toEqual([
      ['a.txt', 1],
      ['b.bin', BIG],
      ['c.txt', 1],
    ]);
  }, 60_000);

  it('are asked for by paths no file can have with a 4xx in the error shape, never a 500', async () => {
    const answer = await submit({ prompt: 'a task with a file', files: [{ path: 'a.txt', content: b64('a') }] });
    const id = idOf(answer.body);
    await waitForEnd(baseUrl, id);
    const base = `${baseUrl}/v1/tasks/${id}/files`;
    for (const wanted of [
      encodeURIComponent('é'.repeat(128)),
      'a'.repeat(256),
      `dir/${'b'.repeat(300)}/c.txt`,
      Array.from({ length: 500 }, () => 'd'.repeat(10)).join('/'),
    ]) {
      const response = await fetch(`${base}/${wanted}`);
      const body = (await response.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
      expect([response.status, typeof body?.error?.code], wanted.slice(0, 40)).toEqual([
        expect.toSatisfy((status: number) => status === 400 || status === 404),
        'string',
      ]);
    }
  });
});

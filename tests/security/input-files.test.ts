/**
 * A tenant's input files against the worker that places them, through the real API and a real worker
 * process (jail on): a name is checked in bytes at submit, and a task never runs without every file it
 * was given. The placement is cut short from outside by a disk that refuses the second file (the
 * worker's soft RLIMIT_FSIZE, set with prlimit: EFBIG, as a full disk's ENOSPC would be); a retry must
 * place them all again, or the task fails naming the file. And a path no file can have, asked of the
 * files route, is a 4xx, not a 500.
 */
import type { TaskView } from '@agentq/contract';
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

let double: OpenAIDouble;
let dataDir: string;
let api: AgentqProcess;
let worker: AgentqProcess;
let baseUrl: string;

const firstUser = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResultsIn = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const b64 = (content: Buffer | string) => Buffer.from(content).toString('base64');

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

async function submit(task: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ agent: 'coder', ...task }] }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const idOf = (body: Record<string, unknown>) => (body as { tasks: Array<{ id: string }> }).tasks[0]!.id;
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
});

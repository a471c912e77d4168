/**
 * A tenant's input files against the worker that places them, through the real API and a real worker
 * process (jail on): a name is checked at submit as the disk will store it (in bytes, and in UTF-8, which
 * has no lone UTF-16 surrogate), and a task never runs without every file it was given. The placement is
 * cut short from outside by a disk that refuses the second file (the worker's soft RLIMIT_FSIZE, set
 * with prlimit: EFBIG, as a full disk's ENOSPC would be); a retry must place them all again, or the task
 * fails naming the file. What files store in Redis, their paths included, counts toward the tenant's
 * limits.mb. And the files routes answer a 4xx, never a 500, for a path no file can have and whatever
 * the task's own code does to its folder while they read it.
 */
import type { ScheduleView, TaskView, UsageView } from '@agentq/contract';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { waitForEnd, type SseMessage } from '../helpers/sse.js';

/** What every task of this file asks its first tool call to show: the sizes of the files it was given. */
const SIZES = 'wc -c a.txt b.bin c.txt 2>&1; true';
/** Past the disk's room for one file (64 KiB), below the task's quota. */
const BIG = 100_000;

const prefix = freshPrefix('inputs');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
/** A tenant with a small limits.mb (512 KiB): what its files store counts toward it. */
const SMALL = `small-${randomBytes(8).toString('hex')}`;

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

/** The prompt of the task that races the files routes (its model runs RACER). */
const RACE = 'a task that races the files routes';
/**
 * Flips `f` between a link to /etc/shadow and a regular file (renamed over it, as fast as Python can),
 * and every 16th time rewrites `big` in place (cut to nothing, then 256 KiB written), until the test
 * leaves a `stop`.
 */
const RACER = [
  'import os, time',
  "open('f', 'w').write('inside\\n')",
  'end = time.time() + 100; n = 0',
  "while not os.path.exists('stop') and time.time() < end:",
  "    os.symlink('/etc/shadow', 'l.tmp'); os.replace('l.tmp', 'f')",
  "    open('r.tmp', 'w').write('inside\\n'); os.replace('r.tmp', 'f')",
  '    if n % 16 == 0:',
  "        with open('big', 'w') as out: out.write('x' * 262144)",
  '    n += 1',
  "print('swaps', n)",
].join('\n');

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => firstUser(request) === RACE && toolResultsIn(request) === 0,
        reply: { toolCalls: [{ name: 'python', arguments: { code: RACER } }] },
      },
      {
        match: (request) => toolResultsIn(request) === 0,
        reply: { toolCalls: [{ name: 'bash', arguments: { command: SIZES } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-input-files-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'files-model',
    extra: {
      AGENTQ_TASK_DISK_MB: '16',
      // The racer's one tool call runs until the test has read enough.
      AGENTQ_TOOL_TIMEOUT_MS: '120000',
      ...tenantsEnv({ acme: { keys: [ACME] }, small: { keys: [SMALL], limits: { mb: 0.5 } } }),
    },
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
  await rm(dataDir, { recursive: true, force: true });
});

/** The disk the worker writes to refuses a file past `bytes` (a soft limit: its jails may still raise theirs). */
function limitWorkerFiles(bytes: number | 'unlimited'): void {
  execFileSync('prlimit', ['--pid', String(worker.child.pid), `--fsize=${bytes}:`]);
}

/** A request as `key`'s tenant (acme's by default). */
function call(url: string, init: RequestInit & { key?: string } = {}): Promise<Response> {
  const { key = ACME, ...rest } = init;
  return fetch(`${baseUrl}${url}`, {
    ...rest,
    headers: {
      authorization: `Bearer ${key}`,
      ...(rest.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(rest.headers as Record<string, string> | undefined),
    },
  });
}
const auth = (key = ACME) => ({ authorization: `Bearer ${key}` });

async function post(
  url: string,
  body: unknown,
  key = ACME,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await call(url, { method: 'POST', body: JSON.stringify(body), key });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function submit(task: Record<string, unknown>, key = ACME): Promise<{ status: number; body: Record<string, unknown> }> {
  return post('/v1/tasks', { tasks: [{ agent: 'coder', ...task }] }, key);
}

const getJson = async <T>(url: string, key = ACME) => (await (await call(url, { key })).json()) as T;

const idOf = (body: Record<string, unknown>) => (body as { tasks: Array<{ id: string }> }).tasks[0]!.id;
const eventsOf = async (id: string) => {
  const response = await call(`/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } });
  return (await response.json()) as Array<{ type: string; data: Record<string, unknown> }>;
};
/** What the task's first tool call showed of its files: the sizes `wc -c` printed. */
const sizesSeen = (events: SseMessage[]) =>
  events
    .filter((event) => event.event === 'tool.result')
    .map((event) => String((event.data.data as { output?: unknown }).output ?? ''))[0];
/** How a task ended: its status, and its error's message if any. */
const endOf = async (id: string) => {
  await waitForEnd(baseUrl, id, auth());
  const task = await getJson<TaskView>(`/v1/tasks/${id}`);
  return `${task.status}${task.error ? `: ${task.error.message}` : ''}`;
};
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
        ? await waitForEnd(baseUrl, idOf(answer.body), auth()).then(async (events) => {
            const task = await getJson<TaskView>(`/v1/tasks/${idOf(answer.body)}`);
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

  it('are refused at submit when UTF-8 would make two names one (lone UTF-16 surrogates), naming each file', async () => {
    // JSON may carry half a surrogate pair (`\ud800`); UTF-8 has none, so Redis and the disk store each
    // as U+FFFD: two names the submit saw as two would be one file (or a file and a folder at once).
    const pairs = [
      ['s\ud800.txt', 's\ud801.txt'],
      ['u\ufffd.txt', 'u\udfff.txt'],
      ['t\ud800', 't\ud801/inner.txt'],
    ];
    const answers = [];
    for (const [index, paths] of pairs.entries()) {
      const answer = await submit({
        prompt: `lone surrogates ${index}`,
        files: paths.map((path) => ({ path, content: b64(path) })),
      });
      answers.push({
        status: answer.status,
        refused: (
          (answer.body as { error?: { details?: Array<{ path: string; message: string }> } }).error?.details ?? []
        )
          .filter((detail) => /lone UTF-16 surrogate.*U\+FFFD/.test(detail.message))
          .map((detail) => detail.path),
        // Accepted, it ran: how did it end?
        ...(answer.status === 202 ? { ran: await endOf(idOf(answer.body)) } : {}),
      });
    }
    expect(answers).toEqual([
      { status: 400, refused: ['tasks.0.files.0.path', 'tasks.0.files.1.path'] },
      { status: 400, refused: ['tasks.0.files.1.path'] },
      { status: 400, refused: ['tasks.0.files.0.path', 'tasks.0.files.1.path'] },
    ]);
  });

  it('are refused in a schedule, and so are idempotency and concurrency keys that UTF-8 would make one', async () => {
    const first = await submit({ prompt: 'keyed once', agent: 'casual', idempotencyKey: 'key-\ud800' });
    const second = await submit({ prompt: 'keyed twice', agent: 'casual', idempotencyKey: 'key-\ud801' });
    const gated = await submit({ prompt: 'gated', agent: 'casual', concurrencyKey: 'gate-\udc00' });
    const scheduled = await post('/v1/schedules', {
      every: 3_600_000,
      paused: true,
      task: { prompt: 'scheduled', agent: 'casual', files: [{ path: 'v\ud800.txt', content: b64('v') }] },
    });
    const shown = (answer: { status: number; body: Record<string, unknown> }) => ({
      status: answer.status,
      // Accepted: which task it answered (a second key that is the first one's answers the first task).
      ...(answer.status === 202 ? { tasks: answer.body.tasks } : {}),
      ...(answer.status === 201 ? { schedule: (answer.body as unknown as ScheduleView).id } : {}),
      fields: ((answer.body as { error?: { details?: Array<{ path: string }> } }).error?.details ?? []).map(
        (detail) => detail.path,
      ),
    });
    expect([first, second, gated, scheduled].map(shown)).toEqual([
      { status: 400, fields: ['tasks.0.idempotencyKey'] },
      { status: 400, fields: ['tasks.0.idempotencyKey'] },
      { status: 400, fields: ['tasks.0.concurrencyKey'] },
      { status: 400, fields: ['task.files.0.path'] },
    ]);
    // Metadata is stored as JSON, which writes a lone surrogate as its escape: its keys come back as sent.
    const metadata = { 'm\ud800': 1, 'm\ud801': 2 };
    const described = await submit({ prompt: 'metadata', agent: 'casual', metadata });
    expect(described.status).toBe(202);
    expect((await getJson<TaskView>(`/v1/tasks/${idOf(described.body)}`)).metadata).toEqual(metadata);
  });

  it('fail the task, naming the file, when one cannot be placed: the task never runs without it', async () => {
    const prompt = 'a disk that refuses b.bin';
    limitWorkerFiles(64 * 1024);
    try {
      const answer = await submit({ prompt, files: threeFiles() });
      expect(answer.status).toBe(202);
      const events = await waitForEnd(baseUrl, idOf(answer.body), auth());
      const task = await getJson<TaskView>(`/v1/tasks/${idOf(answer.body)}`);
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
    const events = await waitForEnd(baseUrl, id, auth());
    const task = await getJson<TaskView>(`/v1/tasks/${id}`);
    // Its first step saw every file whole: the retry placed them all, not only what the first left.
    expect(sizesSeen(events)).toMatch(new RegExp(`^\\s*1 a\\.txt\\n\\s*${BIG} b\\.bin\\n\\s*1 c\\.txt\\n`));
    expect(task.status).toBe('completed');
    // Why it was tried again, in its events: the file, and what the disk said.
    expect(retried?.data.reason).toMatch(/input file "b\.bin" could not be placed.*EFBIG/);
    const listed = await getJson<{ files: Array<{ path: string; size: number }> }>(`/v1/tasks/${id}/files`);
    expect(listed.files.map(({ path, size }) => [path, size])).toEqual([
      ['a.txt', 1],
      ['b.bin', BIG],
      ['c.txt', 1],
    ]);
  }, 60_000);

  it('are asked for by paths no file can have with a 4xx in the error shape, never a 500', async () => {
    const answer = await submit({ prompt: 'a task with a file', files: [{ path: 'a.txt', content: b64('a') }] });
    const id = idOf(answer.body);
    await waitForEnd(baseUrl, id, auth());
    const base = `/v1/tasks/${id}/files`;
    for (const wanted of [
      encodeURIComponent('é'.repeat(128)),
      'a'.repeat(256),
      `dir/${'b'.repeat(300)}/c.txt`,
      Array.from({ length: 500 }, () => 'd'.repeat(10)).join('/'),
    ]) {
      const response = await call(`${base}/${wanted}`);
      const body = (await response.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
      expect([response.status, typeof body?.error?.code], wanted.slice(0, 40)).toEqual([
        expect.toSatisfy((status: number) => status === 400 || status === 404),
        'string',
      ]);
    }
  });
});

describe("what a tenant's files store, toward its limits.mb (tenant small: 512 KiB)", () => {
  it('counts their paths and each file, on a submit, a schedule and a retry: past it, a 429', async () => {
    // 100 empty files, each path 1,003 bytes: 100,300 bytes of names, no content (a tenant sent 51.9 MiB
    // of these past a 1 MiB limit when only contents counted).
    const files = Array.from({ length: 100 }, (_, index) => ({
      path: [
        `${String(index).padStart(3, '0')}${'a'.repeat(247)}`,
        'b'.repeat(250),
        'c'.repeat(250),
        'd'.repeat(250),
      ].join('/'),
      content: '',
    }));
    const pathBytes = files.reduce((sum, file) => sum + Buffer.byteLength(file.path), 0);
    expect(pathBytes).toBe(100_300);
    const written = async () => (await getJson<UsageView>('/v1/usage', SMALL)).writtenBytes;
    // Agent casual: no worker serves it here, so its tasks stay queued, holding what they stored.
    const task = (prompt: string) => ({ prompt, agent: 'casual', files });
    const before = await written();
    const first = await submit(task('paths 1'), SMALL);
    const afterTask = await written();
    const schedule = await post('/v1/schedules', { every: 3_600_000, paused: true, task: task('paths s') }, SMALL);
    const afterSchedule = await written();
    // About 107 KiB a task and 220 KiB the schedule (its task names the files, its hash holds them): the
    // second task fits, a third does not, nor does a retry of the first.
    const second = await submit(task('paths 2'), SMALL);
    const third = await submit(task('paths 3'), SMALL);
    await call(`/v1/tasks/${idOf(first.body)}/cancel`, { method: 'POST', key: SMALL });
    const retry = await call(`/v1/tasks/${idOf(first.body)}/retry`, { method: 'POST', key: SMALL });
    expect({
      task: afterTask - before,
      schedule: afterSchedule - afterTask,
      statuses: [first.status, schedule.status, second.status, third.status, retry.status],
    }).toEqual({
      task: expect.toSatisfy((bytes: number) => bytes > pathBytes),
      schedule: expect.toSatisfy((bytes: number) => bytes > 2 * pathBytes),
      statuses: [202, 201, 202, 429, 429],
    });
  });
});

describe("the files routes while the task's own code changes its folder", () => {
  it('answer the file, a 404 or a 409, never a 5xx nor a host file, to readers racing renames and rewrites', async () => {
    const answer = await submit({ prompt: RACE });
    const id = idOf(answer.body);
    const folder = path.join(dataDir, 'work', id);
    await expect.poll(() => existsSync(path.join(folder, 'f')), { timeout: 30_000 }).toBe(true);
    const seen = new Map<string, number>();
    const count = (key: string) => seen.set(key, (seen.get(key) ?? 0) + 1);
    /** One request; what it answered, as a line: the route, the status, and what the body was. */
    const ask = async (route: string, body: (bytes: Buffer) => string) => {
      const response = await call(`/v1/tasks/${id}${route}`).catch((error: Error) => error);
      if (response instanceof Error) {
        count(`${route} no answer: ${String((response.cause as Error | undefined)?.message ?? response.message)}`);
        return;
      }
      let read: string;
      try {
        const bytes = Buffer.from(await response.arrayBuffer());
        read = response.status === 200 ? body(bytes) : bytes.toString().slice(0, 60);
      } catch {
        // The headers went out, then the answer was cut short: the client knows it is incomplete.
        read = 'cut short';
      }
      count(`${route} ${response.status} ${read}`);
    };
    const archived = (bytes: Buffer) => {
      try {
        return execFileSync('tar', ['-tz'], { input: bytes }).toString().includes('big') ? 'an archive' : 'no big';
      } catch (error) {
        return `not an archive: ${String((error as { stderr?: Buffer }).stderr ?? error).slice(0, 60)}`;
      }
    };
    let oneFile = 0;
    const deadline = Date.now() + 90_000;
    const until = (done: () => boolean) => async (request: () => Promise<void>) => {
      while (!done() && Date.now() < deadline) await request();
    };
    const enough = until(() => oneFile >= 6_000);
    try {
      await Promise.all([
        ...Array.from({ length: 6 }, () =>
          enough(async () => {
            await ask('/files/f', (bytes) =>
              bytes.toString() === 'inside\n' ? 'the file' : bytes.toString().slice(0, 60),
            );
            oneFile++;
          }),
        ),
        enough(() =>
          // (as it was when opened: any part of its 256 KiB, the rewrite being under way)
          ask('/files/big', (bytes) => (/^x*$/.test(bytes.toString()) ? 'the file' : bytes.toString().slice(0, 60))),
        ),
        enough(() =>
          ask('/files', (bytes) => (Array.isArray(JSON.parse(bytes.toString()).files) ? 'a list' : bytes.toString())),
        ),
        enough(() => ask('/files.tar.gz', archived)),
      ]);
    } finally {
      writeFileSync(path.join(folder, 'stop'), '');
    }
    const ran = await endOf(id);
    const answers = Object.fromEntries(seen);
    console.log(`the racer ended ${ran}; ${oneFile} one-file answers:`, answers);
    expect(oneFile).toBeGreaterThanOrEqual(6_000);
    // Each answer is the file (the list, the archive) or a 4xx in the error shape; a file cut short while
    // it was sent is cut short for the client too, never ended as if whole.
    const error = (status: number) => `${status} {"error":{"code":`;
    const sane: Array<[string, string[]]> = [
      ['/files/f ', ['200 the file', error(404)]],
      ['/files/big ', ['200 the file', '200 cut short', error(409)]],
      ['/files ', ['200 a list']],
      ['/files.tar.gz ', ['200 an archive']],
    ];
    const insane = Object.keys(answers).filter(
      (line) => !sane.some(([route, answers]) => answers.some((answer) => line.startsWith(`${route}${answer}`))),
    );
    expect(insane).toEqual([]);
  }, 180_000);
});

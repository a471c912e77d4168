/**
 * The worst authors of `GET /v1/tasks/:id/events?descendants=true`: a tenant asking for another
 * tenant's tree, or reaching its tasks through a cursor it wrote; a model flooding its tree with 600
 * tasks (the follower reads 500 at most, says so, and its cursor still fits a header to resume with);
 * cursors written by hand (garbage, duplicates, huge numbers, other tasks' ids). Real API and worker
 * processes, the wire double as every model.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import { TREE_CURSOR_BYTES, TREE_TASK_LIMIT, type TaskEvent } from '@agentq/contract';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { readSse } from '../helpers/sse.js';

const prefix = freshPrefix('tree-attacks');
const ACME = `acme-${randomBytes(8).toString('hex')}`;
const BETA = `beta-${randomBytes(8).toString('hex')}`;
let double: OpenAIDouble;
let dataDir: string;
let baseUrl: string;

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const lastTool = (request: DoubleRequest) =>
  String(request.messages.findLast((message) => message.role === 'tool')?.content ?? '');
const delegateCall = (tasks: Array<{ agent: string; prompt: string }>) => ({
  toolCalls: [{ id: 'd1', name: 'delegate', arguments: { tasks } }],
});

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => lastTool(request).startsWith('Every task you started has ended'),
        reply: { content: 'gathered' },
      },
      {
        match: (request) => prompt(request) === 'small tree',
        reply: delegateCall([
          { agent: 'writer', prompt: 'small one' },
          { agent: 'writer', prompt: 'small two' },
        ]),
      },
      // 100 children, each starting 5: 601 tasks in all.
      {
        match: (request) => prompt(request) === 'flood',
        reply: delegateCall(Array.from({ length: 100 }, (_, index) => ({ agent: 'coder', prompt: `flood ${index}` }))),
      },
      {
        match: (request) => prompt(request).startsWith('flood '),
        reply: delegateCall(Array.from({ length: 5 }, (_, index) => ({ agent: 'writer', prompt: `leaf ${index}` }))),
      },
      { reply: { content: 'done' } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-tree-attacks-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'model-x',
    extra: tenantsEnv(
      { acme: { keys: [ACME] }, beta: { keys: [BETA] } },
      {
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['coder', 'writer'], maxChildren: 100, maxDescendants: 1_000 },
          },
          coder: {
            description: 'codes',
            instructions: 'You code.',
            tools: ['delegate'],
            delegate: { agents: ['writer'], maxDescendants: 1_000 },
          },
          writer: { description: 'writes', instructions: 'You write.' },
        },
      },
    ),
  });
  const api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/, 60_000))[1]!;
  await spawnAgentq(['worker', '--pools', 'lead,coder,writer', '--concurrency', '50'], env).waitFor(/serving/, 60_000);
}, 120_000);

afterAll(async () => {
  await stopSpawned();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const treeUrl = (id: string, after?: string) =>
  `${baseUrl}/v1/tasks/${id}/events?descendants=true${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;

/** Submits one task as `key`'s tenant and waits for it to end. */
async function finished(key: string, task: { prompt: string; agent: string }): Promise<string> {
  const agentq = createClient({ baseUrl, apiKey: key });
  const [id] = await agentq.submit([task]);
  await agentq.wait(id!, { timeoutMs: 110_000 });
  return id!;
}

async function treeJson(key: string, id: string, after?: string) {
  const response = await fetch(treeUrl(id, after), { headers: { accept: 'application/json', ...bearer(key) } });
  return { status: response.status, headers: response.headers, body: (await response.json()) as unknown };
}

describe('another tenant', () => {
  it("gets a 404 for a tenant's tree and each task of it, and cannot name them in its own tree's cursor", async () => {
    const acmeRoot = await finished(ACME, { prompt: 'small tree', agent: 'lead' });
    const acmeChild = `${acmeRoot}.c1.1`;
    expect((await treeJson(ACME, acmeChild)).status).toBe(200);
    for (const id of [acmeRoot, acmeChild]) {
      expect((await treeJson(BETA, id)).status).toBe(404);
      const sse = await fetch(treeUrl(id), { headers: { accept: 'text/event-stream', ...bearer(BETA) } });
      expect(sse.status).toBe(404);
      await sse.body?.cancel();
    }

    const betaTask = await finished(BETA, { prompt: 'alone', agent: 'writer' });
    // Another task's whole id is not a descendant's part of a cursor.
    expect((await treeJson(BETA, betaTask, `0,${acmeChild}:0`)).status).toBe(400);
    // A part shaped like ACME's child names BETA's own (missing) descendant: nothing of ACME's is read.
    const own = await treeJson(BETA, betaTask, '0,c1.1:0,c1.2:0');
    expect(own.status).toBe(200);
    const events = own.body as TaskEvent[];
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((event) => event.taskId === betaTask)).toBe(true);
    const streamed = await readSse(treeUrl(betaTask, '0,c1.1:0'), bearer(BETA));
    expect(streamed.map((message) => message.data.taskId)).toEqual(events.map((event) => event.taskId));
  }, 120_000);
});

describe('a tree flooded to its limits', () => {
  it(`follows ${TREE_TASK_LIMIT} of its 601 tasks, says which it left out, and resumes with the cursor it gave`, async () => {
    const root = await finished(ACME, { prompt: 'flood', agent: 'lead' });
    const messages = await readSse(treeUrl(root), bearer(ACME));
    const tasks = new Set(messages.filter((message) => message.event !== 'tree.limit').map((m) => m.data.taskId));
    expect(tasks.size).toBe(TREE_TASK_LIMIT);
    const notices = messages.filter((message) => message.event === 'tree.limit');
    expect(notices).toHaveLength(1);
    const leftOut = (notices[0]!.data as unknown as { taskId: string }).taskId;
    expect(tasks.has(leftOut)).toBe(false);
    expect(leftOut.startsWith(`${root}.`)).toBe(true);
    // Each task's events once, gapless.
    const events = messages.filter((message) => message.id).map((message) => message.data);
    for (const task of tasks) {
      const seqs = events.filter((event) => event.taskId === task).map((event) => event.seq);
      expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    }
    expect(events.filter((event) => event.type === 'task.completed')).toHaveLength(TREE_TASK_LIMIT);
    const last = messages.findLast((message) => message.id)!.id;
    expect(last.length).toBeLessThanOrEqual(TREE_CURSOR_BYTES);
    console.log(`a ${tasks.size}-task tree: ${messages.length} messages, last cursor ${last.length} bytes`);
    // The cursor it gave is taken back (not a 431), and after it there is nothing left to send.
    const resumed = await readSse(treeUrl(root), { ...bearer(ACME), 'last-event-id': last });
    expect(resumed.filter((message) => message.event !== 'tree.limit')).toEqual([]);

    const json = await treeJson(ACME, root);
    expect(json.status).toBe(200);
    expect(json.headers.get('agentq-tree-left-out')).toMatch(new RegExp(`^${root}\\.`));
    expect(new Set((json.body as TaskEvent[]).map((event) => event.taskId)).size).toBe(TREE_TASK_LIMIT);
  }, 240_000);
});

describe('a cursor written by hand', () => {
  let root: string;
  beforeAll(async () => {
    root = await finished(ACME, { prompt: 'small tree', agent: 'lead' });
  }, 120_000);

  it.each([
    ['garbage', 'abc'],
    ['a negative seq', '-1'],
    ['an exponent', '1e5'],
    ['a seq of 16 digits', '1234567890123456'],
    ['an empty part', '1,'],
    ['a part without a seq', '1,c1.1'],
    ['a part that is no descendant', '1,zz:1'],
    ['a part with two seqs', '1,c1.1:1:2'],
    ['a task named twice', '1,c1.1:1,c1.1:2'],
    [
      'more parts than a stream follows',
      `1,${Array.from({ length: 600 }, (_, index) => `c1.${index % 999}:1`).join(',')}`,
    ],
    [
      'more bytes than a cursor takes',
      `1,${Array.from({ length: 480 }, (_, index) => `c1.1.c2.1.c3.1.c4.1.c5.${index}:1`).join(',')}`,
    ],
  ])('refuses %s with a 400 that says what a cursor is', async (_name, cursor) => {
    // As EventSource sends it (a header: a URL this long is a 414 before any route).
    const response = await fetch(treeUrl(root), {
      headers: { accept: 'text/event-stream', 'last-event-id': cursor, ...bearer(ACME) },
    });
    const answer = (await response.json()) as { error: { code: string; message: string } };
    expect(response.status).toBe(400);
    expect(answer.error.code).toBe('invalid_request');
    expect(answer.error.message).toMatch(/12,c3\.1:5/);
  });

  it("reads a huge seq as read to there: that task's events are skipped, the others' sent, and the stream ends", async () => {
    const huge = '999999999999999';
    const messages = await readSse(treeUrl(root, `${huge},c1.2:${huge}`), bearer(ACME));
    const tasks = new Set(messages.map((message) => message.data.taskId));
    expect([...tasks]).toEqual([`${root}.c1.1`]);
    // Every task past its end: the stream closes at once, with nothing.
    expect(await readSse(treeUrl(root, `${huge},c1.1:${huge},c1.2:${huge}`), bearer(ACME))).toEqual([]);
  });
});

/**
 * End to end: the same processes `npm start` spawns (API + one worker process per pool), a real
 * Redis, the wire double as the LLM, and nothing but HTTP between the test and agentq.
 */
import type { TaskView } from '@agentq/contract';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstUserText, startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { freePort } from '../setup/redis-server.js';
import { spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

let double: OpenAIDouble;
let agentq: AgentqProcess;
let baseUrl: string;
let dataDir: string;
const prefix = freshPrefix('e2e');

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => toolResults(request) === 0 && (request.tools?.length ?? 0) > 0,
        reply: (request) => ({
          toolCalls: [{ name: 'write_file', arguments: { path: 'answer.txt', content: firstUserText(request) } }],
        }),
      },
      { reply: (request) => ({ content: `answered: ${firstUserText(request)}` }) },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-e2e-'));
  agentq = spawnAgentq(['start'], {
    PORT: String(await freePort()),
    REDIS_URL: redisUrl(),
    AGENTQ_REDIS_PREFIX: prefix,
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: 'e2e-model',
    AGENTQ_BODY_LIMIT: '200kb',
  });
  baseUrl = (await agentq.waitFor(/ready: API at (http[^\s"]+)/))[1]!;
  // The endpoint answers GET /models: no warning about it.
  expect(agentq.output()).not.toMatch(/the model endpoint/);
});

afterAll(async () => {
  const code = await agentq?.stop();
  expect(code).toBe(0);
  await double?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

async function post(body: unknown, raw?: string) {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      tasks?: Array<{ id: string; status: string }>;
      error?: { code: string; message: string; details?: Array<{ path: string }> };
    },
  };
}

describe('agentq start', () => {
  it('starts the API and one worker process per pool', async () => {
    // Each process says it is ready over IPC, and writes its lines asynchronously: a worker's line may
    // come after the "ready" of the whole.
    for (const pool of ['coder', 'file', 'casual']) await agentq.waitFor(new RegExp(`serving ${pool} \\(concurrency`));
  });

  it('runs a batch of 50 tasks submitted in one request across two pools', async () => {
    const tasks = Array.from({ length: 50 }, (_, index) => ({
      prompt: `task number ${index}`,
      agent: index % 2 ? 'coder' : 'file',
    }));
    const submitted = await post({ tasks });
    expect(submitted.status).toBe(202);
    expect(submitted.body.tasks).toHaveLength(50);
    expect(submitted.body.tasks!.every((task) => task.status === 'queued')).toBe(true);
    const ids = submitted.body.tasks!.map((task) => task.id);
    const ends = await Promise.all(ids.map((id) => waitForEnd(baseUrl, id)));
    expect(ends.map((events) => events.at(-1)!.event)).toEqual(ids.map(() => 'task.completed'));
    const views = await Promise.all(
      ids.map(async (id) => (await (await fetch(`${baseUrl}/v1/tasks/${id}`)).json()) as TaskView),
    );
    views.forEach((view, index) => {
      expect(view).toMatchObject({
        status: 'completed',
        agent: tasks[index]!.agent,
        result: `answered: task number ${index}`,
        steps: 2,
      });
    });
    // Each pool ran in its own worker process.
    const workersByPool = new Map<string, Set<string>>();
    for (const events of ends) {
      const started = events.find((event) => event.event === 'task.started')!.data;
      workersByPool.set(started.agent!, (workersByPool.get(started.agent!) ?? new Set()).add(started.worker!));
    }
    expect(workersByPool.get('coder')!.size).toBe(1);
    expect(workersByPool.get('file')!.size).toBe(1);
    expect([...workersByPool.get('coder')!][0]).not.toBe([...workersByPool.get('file')!][0]);
  });

  it('answers 400 naming each bad field and its index', async () => {
    const response = await post({
      tasks: [{ prompt: 'fine' }, { prompt: '' }, { prompt: 'x', agent: 'wizard' }, { prompt: 'y', priority: 99 }],
    });
    expect(response.status).toBe(400);
    expect(response.body.error!.code).toBe('invalid_request');
    expect(response.body.error!.details!.map((detail) => detail.path)).toEqual([
      'tasks.1.prompt',
      'tasks.2.agent',
      'tasks.3.priority',
    ]);
    expect(response.body.error!.message).toMatch(/tasks\.2\.agent: .*"coder"/);
  });

  it('answers 400 for an empty batch, a batch over 10,000 tasks, and a body that is not JSON', async () => {
    expect((await post({ tasks: [] })).body.error!.message).toMatch(/tasks: must hold at least one task/);
    expect((await post({})).status).toBe(400);
    const notJson = await post(undefined, '{"tasks": [');
    expect(notJson).toMatchObject({ status: 400, body: { error: { code: 'invalid_json' } } });
    const tooMany = await post({ tasks: Array.from({ length: 10_001 }, () => ({ prompt: 'p' })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error!.message).toMatch(/at most 10000 tasks per request/);
    // Nothing of a refused request was stored.
    const list = (await (await fetch(`${baseUrl}/v1/tasks?limit=500`)).json()) as { tasks: TaskView[] };
    expect(list.tasks.filter((task) => task.prompt === 'p' || task.prompt === 'fine')).toHaveLength(0);
  });

  it('says what to fix for a body sent as another type, a body not compressed as it says, and a repeated parameter', async () => {
    const body = JSON.stringify({ tasks: [{ prompt: 'sent as a form', agent: 'casual' }] });
    const answer = async (response: Response) => ({
      status: response.status,
      error: ((await response.json()) as { error: { code: string; message: string } }).error,
    });
    // As `curl -d` sends it: a form's content-type.
    const form = await answer(
      await fetch(`${baseUrl}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      }),
    );
    expect(form).toEqual({
      status: 415,
      error: {
        code: 'unsupported_media_type',
        message: expect.stringMatching(
          /content-type is "application\/x-www-form-urlencoded": send JSON, with content-type: application\/json/,
        ),
      },
    });
    const gzip = await answer(
      await fetch(`${baseUrl}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body,
      }),
    );
    expect(gzip).toEqual({
      status: 400,
      error: {
        code: 'invalid_request',
        message: expect.stringMatching(
          /could not be decompressed as its Content-Encoding says .*or without Content-Encoding/,
        ),
      },
    });
    const twice = await answer(await fetch(`${baseUrl}/v1/tasks?limit=1&limit=2`));
    expect(twice).toEqual({
      status: 400,
      error: { code: 'invalid_request', message: 'The query gives limit 2 times: give each parameter once.' },
    });
    const list = (await (await fetch(`${baseUrl}/v1/tasks?limit=500`)).json()) as { tasks: TaskView[] };
    expect(list.tasks.filter((task) => task.prompt === 'sent as a form')).toHaveLength(0);
  });

  it('answers 413 for a body over the limit', async () => {
    const response = await post({ tasks: [{ prompt: 'x'.repeat(300_000) }] });
    expect(response.status).toBe(413);
    expect(response.body.error).toMatchObject({
      code: 'payload_too_large',
      message: expect.stringMatching(/larger than the limit/),
    });
  });

  it('answers 404 for an unknown task, its events, and an unknown route', async () => {
    for (const url of [
      `${baseUrl}/v1/tasks/does-not-exist`,
      `${baseUrl}/v1/tasks/does-not-exist/events`,
      `${baseUrl}/v2/nothing`,
    ]) {
      const response = await fetch(url);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
  });

  it('reports health and readiness', async () => {
    expect(await (await fetch(`${baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${baseUrl}/readyz`)).json()).toEqual({ status: 'ready' });
  });
});

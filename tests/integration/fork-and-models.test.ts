/**
 * A task names its model (within those the operator allows), and a plan's subtasks keep it; a task is
 * forked from a step: the steps before it are not asked of the model again, and the fork goes on with
 * its own prompt and model, linked to its origin.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const last = (request: DoubleRequest) => request.messages.at(-1)!;
const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${stack!.api.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

it('runs a task, and every subtask of its plan, on the model it names; refuses a model the install does not allow', async () => {
  const plan = [{ id: '1', agent: 'casual', task: 'part one', need: [] }];
  stack = await startStack({
    env: { AGENTQ_CONFIG: configFile({ models: { 'model-b': {}, 'model-c': {} } }) },
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\`` },
      },
      { reply: { content: 'done' } },
    ],
  });
  const [named, planned, plain] = await stack.submit([
    { prompt: 'hello b', agent: 'casual', model: 'model-b' },
    { prompt: 'plan with c', model: 'model-c' },
    { prompt: 'hello default', agent: 'casual' },
  ]);
  await Promise.all([named, planned, plain].map((id) => waitForEnd(stack!.api.url, id!)));
  const modelOf = (text: string) =>
    stack!.double.requests
      .filter((request) => JSON.stringify(request.messages).includes(text))
      .map((request) => request.model);
  expect(modelOf('hello b')).toEqual(['model-b']);
  expect(modelOf('hello default')).toEqual(['test-model']);
  // The plan, its subtask and the final answer: all on model-c.
  expect(modelOf('plan with c').concat(modelOf('part one'))).toSatisfy(
    (models: string[]) => models.length >= 3 && models.every((model) => model === 'model-c'),
  );
  const views = await Promise.all(
    [named, planned, plain].map(async (id) => (await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)).body),
  );
  expect(views.map((view) => view.model)).toEqual(['model-b', 'model-c', 'test-model']);
  const child = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${views[1]!.children![0]!.id}`)).body;
  expect(child.model).toBe('model-c');

  const refused = await post('/v1/tasks', {
    tasks: [
      { prompt: 'x', agent: 'casual' },
      { prompt: 'y', agent: 'casual', model: 'gpt-5-turbo-max' },
    ],
  });
  expect(refused.status).toBe(400);
  expect(JSON.stringify(refused.body)).toMatch(
    /tasks\.1\.model: \\"gpt-5-turbo-max\\" is not a model this install allows; allowed: model-b, model-c, test-model/,
  );
  expect((await getJson<{ tasks: unknown[] }>(`${stack.api.url}/v1/tasks`)).body.tasks).toHaveLength(3);
});

it('forks a task from a step: keeps the steps before it without asking the model again, then goes on with its own prompt and model', async () => {
  stack = await startStack({
    pools: ['file'],
    env: { AGENTQ_CONFIG: configFile({ models: { 'model-b': {} } }) },
    rules: [
      // The fork's new instruction, on its own model: it reads the file step 1 wrote, then answers with it.
      {
        match: (request) => request.model === 'model-b' && last(request).role === 'user',
        reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
      },
      {
        match: (request) => request.model === 'model-b',
        reply: (request) => ({ content: `forked answer: ${last(request).content}` }),
      },
      {
        match: (request) => toolResults(request) === 0,
        reply: {
          toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'step one wrote this' } }],
        },
      },
      { match: (request) => toolResults(request) === 1, reply: { toolCalls: [{ name: 'list_files', arguments: {} }] } },
      { reply: { content: 'original answer' } },
    ],
  });
  const [source] = await stack.submit([{ prompt: 'write notes, list them, answer', agent: 'file' }]);
  await waitForEnd(stack.api.url, source!);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${source}`)).body).toMatchObject({
    status: 'completed',
    steps: 3,
    result: 'original answer',
  });
  const before = stack.double.requests.length;

  const forked = await post(`/v1/tasks/${source}/fork`, {
    fromStep: 2,
    prompt: 'Now answer differently.',
    model: 'model-b',
  });
  expect(forked.status).toBe(202);
  expect(forked.body).toMatchObject({ status: 'queued', forkOf: { id: source, step: 2 } });
  const id = forked.body.id as string;
  await waitForEnd(stack.api.url, id);
  const fork = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body;
  // Its work folder started as a copy of the source's: step 1's file is there to read.
  expect(fork).toMatchObject({
    status: 'completed',
    result: expect.stringMatching(/^forked answer: .*step one wrote this/),
    steps: 3,
    model: 'model-b',
    forkOf: { id: source, step: 2 },
    agent: 'file',
  });

  // The fork's model calls: steps 2 and 3; step 1 was kept, not asked again.
  const asked = stack.double.requests.slice(before);
  expect(asked).toHaveLength(2);
  const roles = asked[0]!.messages.map((message) => message.role);
  expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
  expect(asked[0]!.messages[1]!.content).toBe('write notes, list them, answer');
  expect(JSON.stringify(asked[0]!.messages[2])).toContain('step one wrote this');
  expect(last(asked[0]!).content).toBe('Now answer differently.');
  // Its events start where it forked: step 2, after the queued event that names its origin.
  const events = (await fetch(`${stack.api.url}/v1/tasks/${id}/events`, {
    headers: { accept: 'application/json' },
  }).then((response) => response.json())) as Array<{ type: string; step?: number; data: Record<string, unknown> }>;
  expect(events[0]).toMatchObject({ type: 'task.queued', data: { forkOf: source, fromStep: 2 } });
  expect(events.filter((event) => event.type === 'llm.response').map((event) => event.step)).toEqual([2, 3]);

  // From step 1 the prompt replaces the original one.
  const count = stack.double.requests.length;
  const again = await post(`/v1/tasks/${source}/fork`, { fromStep: 1, prompt: 'A new prompt.', model: 'model-b' });
  await waitForEnd(stack.api.url, again.body.id as string);
  const first = stack.double.requests[count]!;
  expect(first.messages.map((message) => message.role)).toEqual(['system', 'user']);
  expect(first.messages[1]!.content).toBe('A new prompt.');
});

it('keeps the files a fork started from when its source is deleted before the fork’s first tool call', async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  stack = await startStack({
    pools: ['file'],
    env: { AGENTQ_CONFIG: configFile({ models: { 'model-b': {} } }) },
    worker: { sweepIntervalMs: 100 },
    rules: [
      // The fork's first call waits until the test deleted the source; then it reads the file step 1 wrote.
      {
        match: (request) => request.model === 'model-b' && toolResults(request) === 1,
        reply: async () => (await released, { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] }),
      },
      {
        match: (request) => request.model === 'model-b',
        reply: (request) => ({ content: `forked answer: ${last(request).content}` }),
      },
      {
        match: (request) => toolResults(request) === 0,
        reply: {
          toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'step one wrote this' } }],
        },
      },
      { reply: { content: 'original answer' } },
    ],
  });
  const [source] = await stack.submit([{ prompt: 'write notes, then answer', agent: 'file' }]);
  await waitForEnd(stack.api.url, source!);
  const forked = await post(`/v1/tasks/${source}/fork`, { fromStep: 2, prompt: 'Read the notes.', model: 'model-b' });
  await expect
    .poll(() => stack!.double.requests.filter((request) => request.model === 'model-b').length, { timeout: 10_000 })
    .toBe(1);
  expect((await fetch(`${stack.api.url}/v1/tasks/${source}`, { method: 'DELETE' })).status).toBe(204);
  await expect.poll(() => existsSync(path.join(stack!.dataDir, 'work', source!)), { timeout: 5_000 }).toBe(false);
  release();
  await waitForEnd(stack.api.url, forked.body.id as string);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${forked.body.id as string}`)).body).toMatchObject({
    status: 'completed',
    result: expect.stringMatching(/^forked answer: .*step one wrote this/),
  });
});

it('says why a fork cannot be made', async () => {
  stack = await startStack({ pools: ['casual'], rules: [{ reply: { content: 'done' } }] });
  const [source] = await stack.submit([{ prompt: 'one step', agent: 'casual' }]);
  await waitForEnd(stack.api.url, source!);
  const tooFar = await post(`/v1/tasks/${source}/fork`, { fromStep: 2 });
  expect(tooFar.status).toBe(409);
  expect(JSON.stringify(tooFar.body)).toContain('has 1 completed step: fromStep must be 1 to 1');
  expect((await post(`/v1/tasks/${source}/fork`, { fromStep: 0 })).status).toBe(400);
  expect((await post(`/v1/tasks/${source}/fork`, { fromStep: 1, model: 'unknown-model' })).status).toBe(400);
  expect((await post(`/v1/tasks/${source}/fork`, { fromStep: 1, temperature: 2 })).status).toBe(400);
  expect((await post('/v1/tasks/01f6dd9a-1890-458d-a3e8-10066049cecf/fork', { fromStep: 1 })).status).toBe(404);
  const [planned] = await stack.submit([{ prompt: 'a planned one' }]);
  const refused = await post(`/v1/tasks/${planned}/fork`, { fromStep: 1 });
  expect(refused.status).toBe(409);
  expect(JSON.stringify(refused.body)).toContain('is a planned task');
});

it("copies a fork's files as they are on disk (links as links, sparse files sparse), and refuses a fork of a task past the quota", async () => {
  const calls: Record<string, string> = {
    // As found from outside: a file with nine more names, and two sparse files far larger than what they hold.
    'make files':
      'head -c 4M /dev/urandom > data; for i in $(seq 9); do ln data again-$i; done; truncate -s 511M sparse-a sparse-b; echo made',
    // Past the 8 MiB quota before a look can stop it.
    'make too much': 'head -c 12M /dev/zero > big; echo made',
  };
  const first = (request: DoubleRequest) =>
    String(request.messages.find((message) => message.role === 'user')?.content ?? '');
  stack = await startStack({
    pools: ['coder'],
    env: { AGENTQ_TASK_DISK_MB: '8' },
    rules: [
      {
        match: (request) => toolResults(request) === 0 && calls[first(request)] !== undefined,
        reply: (request) => ({ toolCalls: [{ name: 'bash', arguments: { command: calls[first(request)]! } }] }),
      },
      { reply: { content: 'done' } },
    ],
  });
  const [files, tooMuch] = await stack.submit([
    { prompt: 'make files', agent: 'coder' },
    { prompt: 'make too much', agent: 'coder' },
  ]);
  await Promise.all([files, tooMuch].map((id) => waitForEnd(stack!.api.url, id!)));
  const du = (id: string) =>
    Number(
      execFileSync('du', ['-s', '-B1', path.join(stack!.dataDir, 'work', id)], { encoding: 'utf8' }).split('\t')[0],
    );

  const forked = await post(`/v1/tasks/${files}/fork`, { fromStep: 2, prompt: 'go on' });
  expect(forked.status).toBe(202);
  await waitForEnd(stack.api.url, forked.body.id as string);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${forked.body.id as string}`)).body.status).toBe(
    'completed',
  );
  // What its source held (4 MiB and the folders' blocks), not 3 GB.
  expect(du(files!)).toBeGreaterThan(4 * 1024 * 1024);
  expect(du(forked.body.id as string)).toBeLessThan(5 * 1024 * 1024);
  expect(du(forked.body.id as string)).toBe(du(files!));

  const refused = await post(`/v1/tasks/${tooMuch}/fork`, { fromStep: 2, prompt: 'go on' });
  expect(refused.status).toBe(409);
  // (How far past depends on when the quota's watch stopped the write: 12 MiB if it ended first, less on a busy machine.)
  const held =
    /work directory holds (\d+\.\d) MiB in 1 entries, past a task's disk quota \(8\.0 MiB and 200000 entries, AGENTQ_TASK_DISK_MB\): a fork, which starts with a copy of it, would pass it/.exec(
      JSON.stringify(refused.body),
    );
  expect(Number(held?.[1])).toBeGreaterThan(8);
});

/**
 * @agentq/client against the real API and worker: submit, wait (with a timeout), follow events
 * across dropped connections without a gap or a repeat, typed errors, schedules, files; and every
 * call it makes is an operation of the OpenAPI document, its answer valid against the documented schema.
 */
import { AgentqApiError, createClient, isLiveDelta, type TaskEvent } from '@agentq/client';
import type { DoubleRequest } from '@agentq/llm';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { openApiDocument } from '@agentq/api';
import { freePort } from '../setup/redis-server.js';
import { startCuttingProxy, type CuttingProxy } from '../helpers/cutting-proxy.js';
import { startStack, type Stack } from '../helpers/stack.js';

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const document = openApiDocument() as unknown as {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
  components: object;
};
const ajv = new Ajv2020({ strict: false });

/** The documented operation a concrete call is (`/v1/tasks/abc/cancel` is `/v1/tasks/{id}/cancel`). */
function operationOf(method: string, url: URL): string | undefined {
  for (const path of Object.keys(document.paths)) {
    const pattern = new RegExp(
      `^${path
        .replace(/[.]/g, '\\.')
        .replace(/\{path\}/g, '.+')
        .replace(/\{\w+\}/g, '[^/]+')}$`,
    );
    if (pattern.test(url.pathname) && document.paths[path]![method.toLowerCase()]) return path;
  }
  return undefined;
}

/** A fetch that checks each call against the OpenAPI document: a documented operation, a documented answer. */
const calls: string[] = [];
const checkedFetch: typeof fetch = async (input, init) => {
  const url = new URL(String(input));
  const method = init?.method ?? 'GET';
  const path = operationOf(method, url);
  calls.push(`${method} ${path ?? url.pathname}`);
  expect(path, `${method} ${url.pathname} is not in the OpenAPI document`).toBeDefined();
  const response = await fetch(input, init);
  const documented = document.paths[path!]![method.toLowerCase()]!.responses[String(response.status)];
  expect(documented, `${method} ${path} answered ${response.status}, which is not documented`).toBeDefined();
  const schema = documented!.content?.['application/json']?.schema;
  if (schema && response.headers.get('content-type')?.includes('application/json')) {
    const body: unknown = await response.clone().json();
    const validate = ajv.compile({ ...schema, components: document.components });
    expect(validate(body), `${method} ${path} ${response.status}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
  return response;
};

let stack: Stack | undefined;
let proxy: CuttingProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await stack?.close();
  stack = undefined;
  proxy = undefined;
});

describe('@agentq/client', () => {
  it('submits and waits, with a timeout and typed errors', async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => JSON.stringify(request.messages).includes('slow'),
          reply: { content: 'late', delayMs: 5_000 },
        },
        { reply: { content: 'the answer' } },
      ],
    });
    const agentq = createClient({ baseUrl: stack.api.url, fetch: checkedFetch });
    const [id, slow] = await agentq.submit([
      { prompt: 'quick', agent: 'casual', metadata: { mine: 1 } },
      { prompt: 'slow one', agent: 'casual' },
    ]);
    const task = await agentq.wait(id!, { timeoutMs: 20_000 });
    expect(task).toMatchObject({ id, status: 'completed', result: 'the answer', metadata: { mine: 1 } });

    const late = await agentq.wait(slow!, { timeoutMs: 300 }).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(AgentqApiError);
    expect(late).toMatchObject({ code: 'timeout', status: 0 });
    const stop = new AbortController();
    const stopped = agentq.wait(slow!, { signal: stop.signal }).catch((error: unknown) => error);
    stop.abort(new Error('no longer wanted'));
    expect(await stopped).toMatchObject({ message: 'no longer wanted' });

    const missing = await agentq.get('01f6dd9a-1890-458d-a3e8-10066049cecf').catch((error: unknown) => error);
    expect(missing).toMatchObject({ code: 'not_found', status: 404, retryable: false });
    const bad = await agentq.submit([{ prompt: '', agent: 'casual' }]).catch((error: unknown) => error);
    expect(bad).toMatchObject({ code: 'invalid_request', status: 400, details: [{ path: 'tasks.0.prompt' }] });
    const nobody = createClient({ baseUrl: `http://127.0.0.1:${await freePort()}` });
    expect(await nobody.get(id!).catch((error: unknown) => error)).toMatchObject({ code: 'network', retryable: true });
    await agentq.cancel(slow!);
    expect((await agentq.wait(slow!, { timeoutMs: 10_000 })).status).toBe('cancelled');
  });

  it('follows events across dropped connections without a gap or a repeat', async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request) < 4,
          reply: { toolCalls: [{ name: 'list_files', arguments: { path: '.' } }], delayMs: 150 },
        },
        { reply: { content: 'listed four times' } },
      ],
    });
    // The first two event streams are cut once 900 bytes of them went through (the headers and an event or two).
    proxy = await startCuttingProxy(stack.api.url, { cuts: 2, cutAfterBytes: 900 });
    const agentq = createClient({ baseUrl: proxy.url, fetch: checkedFetch });
    const [id] = await agentq.submit([{ prompt: 'list it', agent: 'file' }]);
    const seen: TaskEvent[] = [];
    for await (const event of agentq.events(id!, { retryMs: 50 })) if (!isLiveDelta(event)) seen.push(event);
    const stored = (await (
      await fetch(`${stack.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json()) as TaskEvent[];
    expect(seen.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(seen.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
    expect(seen.at(-1)!.type).toBe('task.completed');
    const streams = proxy.heads.filter((head) => /^GET \S+\/events/.test(head));
    expect(streams.length).toBeGreaterThanOrEqual(3);
    // Each reconnect asked for what came after the last event it had.
    expect(streams.slice(1).every((head) => /last-event-id: \d+/i.test(head))).toBe(true);

    // From a given point on.
    const later: number[] = [];
    for await (const event of agentq.events(id!, { after: 3 })) if (!isLiveDelta(event)) later.push(event.seq);
    expect(later).toEqual(stored.slice(3).map((event) => event.seq));
  });

  it('takes file contents as the API does: base64 text (the wire format), bytes or { base64 }', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'ok' } }] });
    const agentq = createClient({ baseUrl: stack.api.url, fetch: checkedFetch });
    const [id] = await agentq.submit([
      {
        prompt: 'keep them',
        agent: 'casual',
        files: [
          { path: 'wire.txt', content: Buffer.from('as docs/api.md writes it').toString('base64') },
          { path: 'bytes.bin', content: new Uint8Array([0, 255]) },
          { path: 'object.txt', content: { base64: Buffer.from('wrapped').toString('base64') } },
        ],
      },
    ]);
    await agentq.wait(id!, { timeoutMs: 20_000 });
    const text = async (path: string) => Buffer.from(await agentq.files.download(id!, path)).toString('utf8');
    expect(await text('wire.txt')).toBe('as docs/api.md writes it');
    expect([...(await agentq.files.download(id!, 'bytes.bin'))]).toEqual([0, 255]);
    expect(await text('object.txt')).toBe('wrapped');

    // Anything else is refused before it is sent, naming the field and what it takes.
    const wrong = await agentq
      .submit([{ prompt: 'p', agent: 'casual', files: [{ path: 'a.txt', content: 42 as never }] }])
      .catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(AgentqApiError);
    expect(wrong).toMatchObject({ code: 'invalid_request', status: 0, details: [{ path: 'tasks.0.files.0.content' }] });
    expect((wrong as Error).message).toMatch(/tasks\.0\.files\.0\.content: .*base64 text.*Uint8Array/);
  });

  it('makes schedules and moves files', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'ok' } }] });
    const agentq = createClient({ baseUrl: stack.api.url, fetch: checkedFetch });
    const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253, 254, 255]);
    const [id] = await agentq.submit([
      { prompt: 'keep it', agent: 'coder', files: [{ path: 'in/raw.bin', content: bytes }] },
    ]);
    await agentq.wait(id!, { timeoutMs: 20_000 });
    expect((await agentq.files.list(id!)).files.map((file) => [file.path, file.size])).toEqual([['in/raw.bin', 9]]);
    expect([...(await agentq.files.download(id!, 'in/raw.bin'))]).toEqual([...bytes]);
    expect((await agentq.files.archive(id!)).slice(0, 2)).toEqual(new Uint8Array([0x1f, 0x8b]));
    expect(await agentq.deliveries.list(id!)).toEqual([]);

    const schedule = await agentq.schedules.create({
      cron: '0 9 * * 1',
      timezone: 'Europe/Paris',
      task: { prompt: 'weekly', agent: 'casual' },
    });
    expect(schedule).toMatchObject({ cron: '0 9 * * 1', paused: false });
    expect((await agentq.schedules.update(schedule.id, { paused: true })).paused).toBe(true);
    expect((await agentq.schedules.list()).schedules.map((one) => one.id)).toEqual([schedule.id]);
    await agentq.schedules.remove(schedule.id);
    expect(await agentq.schedules.get(schedule.id).catch((error: unknown) => error)).toMatchObject({
      code: 'not_found',
    });
    expect(calls.length).toBeGreaterThan(10);
  });
});

/**
 * Thousands of malformed requests, generated from a fixed seed across every kind of client mistake
 * the API meets: broken percent-encoding, ids that are no task's (or name another key), bad
 * Last-Event-ID, charsets and encodings, invalid bodies, deep or huge metadata, bad queries, bad keys,
 * oversized request heads, unknown methods. Every answer must be a 4xx in the JSON error shape.
 * Then every operation of the API's own OpenAPI document, each of its inputs malformed in turn
 * (tests/helpers/openapi-fuzz.ts): a route added to the document is fuzzed without a change here.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { seeded } from '../helpers/seeded.js';
import { waitForEnd } from '../helpers/sse.js';
import { tenantsEnv } from '../helpers/config-file.js';
import { fuzzOperations, type FuzzedRequest, type OpenApiDocument } from '../helpers/openapi-fuzz.js';

const KEY = 'fuzz-key';
const ADMIN_KEY = 'fuzz-admin-key';
let stack: Stack;
let port: number;
let taskId: string;

beforeAll(async () => {
  // One pool, whose tasks end at once: the fuzz's targets have folders, files and an end (planned tasks wait).
  stack = await startStack({
    pools: ['casual'],
    rules: [{ reply: { content: 'done' } }],
    env: tenantsEnv({ fuzz: { keys: [KEY] }, ops: { keys: [ADMIN_KEY], admin: true } }),
  });
  port = Number(new URL(stack.api.url).port);
  const response = await fetch(`${stack.api.url}/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    // In a pool no worker runs here: it stays queued, so no request may end or delete it.
    body: JSON.stringify({ tasks: [{ prompt: 'the one real task', agent: 'coder' }] }),
  });
  taskId = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
});

afterAll(async () => {
  await stack?.close();
});

interface FuzzRequest {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

function generate(count: number, random: () => number): FuzzRequest[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const int = (max: number) => Math.floor(random() * max);
  const auth = { authorization: `Bearer ${KEY}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const badPercent = [
    '%ZZ',
    '%E0%A4%A',
    '%',
    '%G1',
    '%C3%28',
    '%ED%A0%80',
    '%FF%FE',
    '%%',
    '%2',
    '%u0041',
    'a%',
    '%E2%82',
  ];
  const badIds = [
    'x',
    'abc:events',
    `${'0'.repeat(8)}-0000-0000-0000-000000000000:events`,
    '..',
    '...',
    'task%20id',
    `${'a'.repeat(200)}`,
    'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ',
    '%00',
    'null',
    '-1',
    '1e21',
    `${'f'.repeat(36)}`,
  ];
  // (No value that is a valid seq once a header's spaces are trimmed: that would be a real, endless stream.)
  const badAfter = [
    '-1',
    '1.5',
    '1e21',
    'Infinity',
    'abc',
    '',
    '1 2',
    '0x10',
    '١٢',
    '9'.repeat(30),
    'NaN',
    '1,2',
    '+3',
  ];
  const routes = (id: string) =>
    [
      ['GET', `/v1/tasks/${id}`],
      ['GET', `/v1/tasks/${id}/events`],
      ['POST', `/v1/tasks/${id}/cancel`],
      ['POST', `/v1/tasks/${id}/retry`],
      ['POST', `/v1/tasks/${id}/input`],
    ] as const;
  const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const invalidBodies = [
    () => '{"tasks":[{"prompt":"x"',
    () => '{"tasks":[{"prompt":"x",}]}',
    () => '{"tasks":"x"}',
    () => '{"tasks":[1]}',
    () => '{"tasks":[]}',
    () => '{}',
    () => 'null',
    () => '[]',
    () => '"tasks"',
    () => `{"tasks":[{"prompt":"   "}]}`,
    () => `{"tasks":[{"prompt":"x","agent":"nope"}]}`,
    () => `{"tasks":[{"prompt":"x","priority":${pick(['0', '11', '1.5', '"5"', 'null', '-3'])}}]}`,
    () => `{"tasks":[{"prompt":"x","idempotencyKey":${pick(['""', JSON.stringify('k'.repeat(300)), '5'])}}]}`,
    () => `{"tasks":[{"prompt":"x","metadata":${nested(21 + int(3000))}}]}`,
    () => `{"tasks":[{"prompt":"x","metadata":{"blob":"${'b'.repeat(70_000)}"}}]}`,
    () => `{"tasks":[{"prompt":"x","metadata":"not an object"}]}`,
    () => `{"tasks":[{"prompt":${JSON.stringify('p'.repeat(200_001))}}]}`,
    () => `{"tasks":[${Array.from({ length: 10_001 }, () => '{"prompt":"x"}').join(',')}]}`,
    () => `{"tasks":[{"prompt":"x"}]}\u0000`,
    // Plans a client gives: wrong shapes, too big, or graphs that cannot run.
    () => `{"tasks":[{"prompt":"x","plan":${pick(['"nope"', '[]', '{}', 'null', '[1]', '[{"id":"1"}]'])}}]}`,
    () => `{"tasks":[{"prompt":"x","agent":"coder","plan":[{"id":"1","agent":"casual","task":"t"}]}]}`,
    () =>
      `{"tasks":[{"prompt":"x","plan":${JSON.stringify(Array.from({ length: 101 + int(200) }, (_, index) => ({ id: String(index), agent: 'casual', task: 't' })))}}]}`,
    () =>
      `{"tasks":[{"prompt":"x","plan":${JSON.stringify(Array.from({ length: 100 }, (_, index) => ({ id: String(index), agent: 'casual', task: 't', need: [String((index + 1) % 100)] })))}}]}`,
    () =>
      `{"tasks":[{"prompt":"x","plan":[{"id":"1","agent":"casual","task":"t","need":${JSON.stringify(Array.from({ length: 10_000 }, (_, index) => String(index)))}}]}]}`,
    () => `{"tasks":[{"prompt":"x","plan":[{"id":"__proto__","agent":"casual","task":"t","need":["constructor"]}]}]}`,
    () =>
      `{"tasks":[{"prompt":"x","plan":[{"id":"${'i'.repeat(65)}","agent":"planner","task":"${'t'.repeat(20_001)}"}]}]}`,
  ];
  const kinds: Array<() => FuzzRequest> = [
    // Malformed percent-encoding, on every route.
    () => {
      const [method, path] = pick(routes(`${pick(badPercent)}${pick(['', 'abc', taskId.slice(0, 8)])}`));
      return {
        kind: 'percent-encoding',
        method,
        path,
        headers: method === 'POST' ? json : auth,
        ...(method === 'POST' ? { body: '{"text":"x"}' } : {}),
      };
    },
    // Ids that are no task's, or would name another Redis key.
    () => {
      const [method, path] = pick(routes(encodeURIComponent(pick(badIds))));
      return {
        kind: 'bad id',
        method,
        path,
        headers: method === 'POST' ? json : auth,
        ...(method === 'POST' ? { body: '{"text":"x"}' } : {}),
      };
    },
    // Last-Event-ID and after, in both modes.
    () => {
      const value = pick(badAfter);
      const header = random() < 0.5;
      return {
        kind: 'last-event-id',
        method: 'GET',
        path: `/v1/tasks/${taskId}/events${header ? '' : `?after=${encodeURIComponent(value)}`}`,
        // A header carries bytes only: a non-ASCII value goes as its percent-encoding, malformed all the same.
        headers: {
          ...auth,
          accept: pick(['application/json', 'text/event-stream']),
          ...(header
            ? { 'last-event-id': /^[\x20-\x7e]+$/.test(value) ? value : encodeURIComponent(value) || ' ' }
            : {}),
        },
      };
    },
    // Charsets and encodings.
    () => ({
      kind: 'content-type',
      method: 'POST',
      path: '/v1/tasks',
      headers: {
        ...auth,
        'content-type': pick([
          'application/json; charset=latin1',
          'application/json; charset=utf-16',
          'application/json; charset=klingon',
          'application/json; charset=ascii',
        ]),
      },
      body: '{"tasks":[{"prompt":"x","agent":"casual"}]}',
    }),
    () => ({
      kind: 'content-encoding',
      method: 'POST',
      path: '/v1/tasks',
      headers: { ...json, 'content-encoding': pick(['zstdx', 'compress', 'gzip', 'deflate', 'br', 'x-custom']) },
      body: '{"tasks":[{"prompt":"x","agent":"casual"}]}',
    }),
    // Bodies that break the schema or JSON itself.
    () => ({ kind: 'body', method: 'POST', path: '/v1/tasks', headers: json, body: pick(invalidBodies)() }),
    () => ({
      kind: 'statuses',
      method: 'POST',
      path: '/v1/tasks/statuses',
      headers: json,
      body: pick([
        '{"ids":"x"}',
        '{"ids":[]}',
        `{"ids":["${pick(badIds)}"]}`,
        '{"ids":[1]}',
        '{}',
        `{"ids":${JSON.stringify(Array.from({ length: 10_001 }, () => taskId))}}`,
      ]),
    }),
    () => ({
      kind: 'input',
      method: 'POST',
      path: `/v1/tasks/${taskId}/input`,
      headers: json,
      body: pick(['{"text":""}', '{"text":5}', '{}', '{"text":', `{"text":${JSON.stringify('t'.repeat(100_001))}}`]),
    }),
    // Bad queries.
    () => ({
      kind: 'query',
      method: 'GET',
      path: `/v1/tasks?${pick(['status=bogus', 'limit=0', 'limit=501', 'limit=abc', 'cursor=xyz', 'cursor=-1', `q=${'q'.repeat(201)}`, 'status=queued&status=failed', 'limit=1.5', 'q=', 'fields=result', 'fields='])}`,
      headers: auth,
    }),
    () => ({
      kind: 'usage query',
      method: 'GET',
      path: `/v1/usage?${pick(['tenant=', `tenant=${'t'.repeat(65)}`, 'tenant=a%2Fb', 'tenant=..%2F..', 'tenant=a&tenant=b', 'tennat=acme', 'tenant=%00', 'tenant=a%20b', 'tenant[x]=y'])}`,
      headers: auth,
    }),
    // Keys: missing, wrong, malformed header or cookie.
    () => ({
      kind: 'auth',
      method: pick(['GET', 'POST']),
      path: '/v1/tasks',
      headers: pick<Record<string, string>>([
        {},
        { authorization: 'Bearer' },
        { authorization: `Basic ${Buffer.from(KEY).toString('base64')}` },
        { authorization: `Bearer ${KEY} extra` },
        { authorization: 'Bearer wrong-key' },
        { cookie: 'agentq_key=%E0%A4%A' },
        { cookie: 'agentq_key=' },
        { cookie: `agentq_key=${'%'.repeat(20)}` },
        { 'x-api-key': '' },
      ]),
    }),
    // A request head past Node's limit, and a URL past agentq's.
    () => ({ kind: 'huge', method: 'GET', path: `/v1/tasks/${'a'.repeat(pick([9_000, 20_000]))}`, headers: auth }),
    () => ({
      kind: 'huge header',
      method: 'GET',
      path: '/v1/tasks',
      headers: { ...auth, 'x-padding': 'p'.repeat(17_000) },
    }),
    // Methods no route has.
    () => ({
      kind: 'method',
      method: pick(['PUT', 'DELETE', 'PATCH']),
      path: pick(['/v1/tasks', `/v1/tasks/${taskId}`, '/v1/pools']),
      headers: auth,
    }),
  ];
  return Array.from({ length: count }, (_, index) => kinds[index % kinds.length]!());
}

function send(request: FuzzRequest): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: request.method,
        path: request.path,
        headers: request.headers,
        timeout: 10_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            type: String(response.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.on('timeout', () => {
      outgoing.destroy();
      resolve({ status: 0, type: 'no answer within 10 s', body: '' });
    });
    outgoing.end(request.body);
  });
}

it('answers 2,600 malformed requests each with a JSON 4xx', async () => {
  const requests = generate(2_600, seeded(8));
  const statuses = new Map<number, number>();
  const wrong: string[] = [];
  for (let start = 0; start < requests.length; start += 20) {
    const batch = requests.slice(start, start + 20);
    const answers = await Promise.all(batch.map(send));
    answers.forEach((answer, index) => {
      const request = batch[index]!;
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      let code: unknown;
      try {
        code = (JSON.parse(answer.body) as { error?: { code?: unknown } }).error?.code;
      } catch {
        code = undefined;
      }
      if (
        answer.status < 400 ||
        answer.status >= 500 ||
        !answer.type.startsWith('application/json') ||
        typeof code !== 'string'
      ) {
        wrong.push(
          `${request.kind}: ${request.method} ${request.path.slice(0, 80)} -> ${answer.status} ${answer.type} ${answer.body.slice(0, 120)}`,
        );
      }
    });
  }
  expect(wrong).toEqual([]);
  // The real task was never touched by any of it.
  const task = await fetch(`${stack.api.url}/v1/tasks/${taskId}`, { headers: { authorization: `Bearer ${KEY}` } });
  expect(task.status).toBe(200);
  console.log(
    `fuzz: ${requests.length} malformed requests; statuses ${[...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}×${count}`)
      .join(', ')}`,
  );
}, 120_000);

it('ends a HEAD on the events route at once', async () => {
  for (const path of [`/v1/tasks/${taskId}/events`, '/v1/tasks/not-a-task/events']) {
    const answer = await send({ kind: 'head', method: 'HEAD', path, headers: { authorization: `Bearer ${KEY}` } });
    expect([200, 404]).toContain(answer.status);
    expect(answer.body).toBe('');
  }
});

/** Placeholders of the ids a request leaves valid: the fuzz's own task and schedule, made again when gone. */
const TARGET_TASK = '{target-task}';
const TARGET_SCHEDULE = '{target-schedule}';

it('answers every operation of the OpenAPI document, each input malformed in turn, without a 5xx', async () => {
  const document = (await (await fetch(`${stack.api.url}/openapi.json`)).json()) as OpenApiDocument;
  const fuzzed = fuzzOperations({
    document,
    // What a request leaves valid: the fuzz's own task and schedule (by the path), the task's file.
    pathValue: (name, template) => {
      if (name === 'path') return 'a.txt';
      if (name !== 'id') return 'x';
      return template.startsWith('/v1/schedules/') ? TARGET_SCHEDULE : TARGET_TASK;
    },
    // What the document cannot say of a valid body: a schedule's task is free-form there.
    examples: {
      createSchedule: {
        every: 3_600_000,
        task: { prompt: 'fuzzed schedule', agent: 'casual', webhook: { url: 'https://example.com/hook' } },
      },
      updateSchedule: {
        paused: true,
        task: { prompt: 'changed', agent: 'casual', webhook: { url: 'https://example.com/hook' } },
      },
    },
    headers: { accept: 'application/json' },
  });
  // Shuffled from a fixed seed, with the deletes last: the targets live through most of it.
  const random = seeded(57);
  const ordered = fuzzed
    .map((request) => ({ request, order: (request.method === 'DELETE' ? 1 : 0) + random() }))
    .sort((a, b) => a.order - b.order)
    .map(({ request }) => request);
  const headersFor = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  const targets = { task: '', schedule: '' };
  const ensureTargets = async () => {
    if (
      !targets.task ||
      (await fetch(`${stack.api.url}/v1/tasks/${targets.task}`, { headers: headersFor(KEY) })).status !== 200
    ) {
      const response = await fetch(`${stack.api.url}/v1/tasks`, {
        method: 'POST',
        headers: headersFor(KEY),
        body: JSON.stringify({
          tasks: [{ prompt: 'the fuzz target', agent: 'casual', files: [{ path: 'a.txt', content: 'YQ==' }] }],
        }),
      });
      targets.task = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks[0]!.id;
    }
    if (
      !targets.schedule ||
      (await fetch(`${stack.api.url}/v1/schedules/${targets.schedule}`, { headers: headersFor(KEY) })).status !== 200
    ) {
      const response = await fetch(`${stack.api.url}/v1/schedules`, {
        method: 'POST',
        headers: headersFor(KEY),
        body: JSON.stringify({ every: 3_600_000, paused: true, task: { prompt: 'the fuzz target', agent: 'casual' } }),
      });
      targets.schedule = ((await response.json()) as { id: string }).id;
    }
  };
  await ensureTargets();
  await waitForEnd(stack.api.url, targets.task, headersFor(KEY));
  const byOperation = new Map<string, { sent: number; refused: number }>();
  const wrong: string[] = [];
  for (let start = 0; start < ordered.length; start += 20) {
    await ensureTargets();
    const batch = ordered.slice(start, start + 20).map((request, index): FuzzedRequest => ({
      ...request,
      path: request.path.replaceAll(TARGET_TASK, targets.task).replaceAll(TARGET_SCHEDULE, targets.schedule),
      // A third as an admin: the admins' routes are reached too.
      headers: { authorization: `Bearer ${(start + index) % 3 === 0 ? ADMIN_KEY : KEY}`, ...request.headers },
    }));
    const answers = await Promise.all(batch.map(send));
    answers.forEach((answer, index) => {
      const request = batch[index]!;
      const counts = byOperation.get(request.operation) ?? { sent: 0, refused: 0 };
      counts.sent++;
      if (answer.status >= 400 && answer.status < 500) counts.refused++;
      byOperation.set(request.operation, counts);
      let code: unknown;
      try {
        code = (JSON.parse(answer.body) as { error?: { code?: unknown } }).error?.code;
      } catch {
        code = undefined;
      }
      const refusedWell =
        answer.status < 400 || (answer.type.startsWith('application/json') && typeof code === 'string');
      if (answer.status === 0 || answer.status >= 500 || !refusedWell)
        wrong.push(
          `${request.operation} (${request.kind}): ${request.method} ${request.path.slice(0, 80)} ${request.body?.slice(0, 160) ?? ''} -> ${answer.status} ${answer.body.slice(0, 160)}`,
        );
    });
  }
  console.log(
    `OpenAPI fuzz: ${ordered.length} requests over ${byOperation.size} operations; ${[...byOperation]
      .map(([operation, { sent, refused }]) => `${operation} ${refused}/${sent}`)
      .join(', ')}`,
  );
  expect(wrong).toEqual([]);
  // Every operation of the document was sent malformed input, and each that takes any refused some of it.
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect([...byOperation.keys()].sort()).toEqual(operations.sort());
  for (const [operation, { refused }] of byOperation)
    if (operation.includes('{') || /^(POST|PATCH|DELETE)/.test(operation))
      expect(refused, operation).toBeGreaterThan(0);
}, 300_000);

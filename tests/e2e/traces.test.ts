/**
 * Traces across processes: the API and two worker processes send their spans over OTLP/HTTP to a
 * receiver this test runs. A planned task is one trace: its submit (linked to the POST's span), the
 * planner's run, each subtask's run, their model calls (GenAI attributes) and tool calls, and the run
 * that ends the task, each the child it should be.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { processEnv, spawnAgentq, type AgentqProcess } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpValue[] };
}
interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
}

const valueOf = (value: OtlpValue): unknown =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
  value.boolValue ??
  value.arrayValue?.values.map(valueOf);
const attributesOf = (list: Array<{ key: string; value: OtlpValue }> = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/** An OTLP/HTTP (JSON) receiver: every span it is sent, with its service's name. */
async function startReceiver(): Promise<{ url: string; spans: Span[]; close(): Promise<void> }> {
  const spans: Span[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: OtlpValue }> };
          scopeSpans: Array<{
            spans: Array<
              Omit<Span, 'service' | 'attributes'> & {
                attributes?: Array<{ key: string; value: OtlpValue }>;
                links?: Span['links'];
              }
            >;
          }>;
        }>;
      };
      for (const resource of body.resourceSpans) {
        const service = String(attributesOf(resource.resource.attributes)['service.name']);
        for (const scope of resource.scopeSpans)
          for (const span of scope.spans)
            spans.push({
              ...span,
              service,
              parentSpanId: span.parentSpanId || undefined,
              attributes: attributesOf(span.attributes),
              links: span.links ?? [],
            });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const plan = [
  { id: '1', agent: 'file', task: 'write the note', need: [] },
  { id: '2', agent: 'casual', task: 'say the note', need: ['1'] },
];

const prefix = freshPrefix('traces');
const processes: AgentqProcess[] = [];
let double: OpenAIDouble;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dataDir: string;
let baseUrl: string;

beforeAll(async () => {
  receiver = await startReceiver();
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\`` },
      },
      { match: (request) => system(request).startsWith('You write the final answer'), reply: { content: 'all done' } },
      {
        match: (request) => promptOf(request).startsWith('write the note') && toolResults(request) === 0,
        reply: {
          toolCalls: [{ name: 'write_file', arguments: { path: 'note.txt', content: 'hi' } }],
          usage: { promptTokens: 40, completionTokens: 8 },
        },
      },
      { reply: { content: 'done', usage: { promptTokens: 20, completionTokens: 4 } } },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-traces-'));
  // The SDK's batches go out every 100 ms (default 5 s).
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'trace-model',
    extra: { AGENTQ_LLM_MAX_RETRIES: '0', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
  });
  const api = spawnAgentq(['api'], env);
  const planner = spawnAgentq(['worker', '--pools', 'planner'], env);
  const agents = spawnAgentq(['worker', '--pools', 'file,casual'], env);
  processes.push(api, planner, agents);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/))[1]!;
  await planner.waitFor(/serving planner/);
  await agents.waitFor(/serving file, casual/);
});

afterAll(async () => {
  await Promise.all(processes.map((process) => process.stop()));
  await double?.close();
  await receiver?.close();
  await deletePrefix(prefix);
  await rm(dataDir, { recursive: true, force: true });
});

it('follows a planned task in one trace, across the API and two worker processes', async () => {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'plan a note' }, { prompt: 'just this', agent: 'casual' }] }),
  });
  const [rootId, plainId] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
  await Promise.all([waitForEnd(baseUrl, rootId!), waitForEnd(baseUrl, plainId!)]);

  const runsOf = (taskId: string) =>
    receiver.spans.filter((span) => span.name.startsWith('run ') && span.attributes['agentq.task.id'] === taskId);
  // Every run has ended (and been sent): the plan, two subtasks, the end; the plain task's.
  await expect
    .poll(
      () =>
        runsOf(rootId!).length +
        receiver.spans.filter(
          (span) => span.attributes['agentq.task.root_id'] === rootId && span.attributes['agentq.task.id'] !== rootId,
        ).length,
      { timeout: 15_000 },
    )
    .toBe(4);
  await expect.poll(() => runsOf(plainId!).length, { timeout: 15_000 }).toBe(1);

  const submit = receiver.spans.find(
    (span) => span.name === 'submit task' && span.attributes['agentq.task.id'] === rootId,
  )!;
  expect(submit).toMatchObject({ service: 'agentq-api', parentSpanId: undefined });
  // Linked to the request that submitted it, whose own trace it is not.
  const post = receiver.spans.find((span) => span.name === 'POST /v1/tasks')!;
  expect(post).toMatchObject({
    service: 'agentq-api',
    attributes: expect.objectContaining({ 'http.route': '/v1/tasks', 'http.response.status_code': 202 }),
  });
  expect(submit.links).toEqual([expect.objectContaining({ traceId: post.traceId, spanId: post.spanId })]);
  expect(submit.traceId).not.toBe(post.traceId);

  const trace = receiver.spans.filter((span) => span.traceId === submit.traceId);
  const byId = new Map(trace.map((span) => [span.spanId, span]));
  const parentOf = (span: Span) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);

  // The planner's two runs (the plan, then the end once its subtasks ended) are children of the submit.
  const rootRuns = runsOf(rootId!);
  expect(rootRuns.map((span) => [span.service, span.name, span.traceId, span.parentSpanId])).toEqual(
    rootRuns.map(() => ['agentq-worker', 'run planner task', submit.traceId, submit.spanId]),
  );
  // Each subtask's run, in the other worker process, is a child of the planner's run that made the plan.
  const subtaskRuns = trace.filter((span) => span.name === 'run file task' || span.name === 'run casual task');
  expect(subtaskRuns).toHaveLength(2);
  for (const run of subtaskRuns) expect(rootRuns.map((span) => span.spanId)).toContain(run.parentSpanId);
  const fileRun = subtaskRuns.find((span) => span.name === 'run file task')!;

  // Model calls, with the GenAI attributes, and the tool call, each a child of its run.
  const chats = trace.filter((span) => span.name === 'chat trace-model');
  expect(chats.length).toBe(5); // plan, write (tool call), write (answer), say, final answer
  for (const chat of chats) {
    expect(parentOf(chat)?.name).toMatch(/^run /);
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'trace-model',
      'gen_ai.usage.input_tokens': expect.any(Number),
      'gen_ai.usage.output_tokens': expect.any(Number),
    });
  }
  expect(
    chats
      .filter((chat) => chat.parentSpanId === fileRun.spanId)
      .map((chat) => chat.attributes['gen_ai.usage.input_tokens']),
  ).toEqual([40, 20]);
  const tool = trace.find((span) => span.name === 'execute_tool write_file')!;
  expect(tool).toMatchObject({
    parentSpanId: fileRun.spanId,
    attributes: expect.objectContaining({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'write_file' }),
  });

  // The other task of the same request is a trace of its own.
  expect(runsOf(plainId!)[0]!.traceId).not.toBe(submit.traceId);
});

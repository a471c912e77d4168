/**
 * Agents that start agents: a `lead` whose model calls `delegate` starts children on two other pools;
 * its run pauses holding no worker and resumes with their answers. A child that delegates in turn works;
 * a call past the depth limit is answered to the model, and its task still completes. Cancelling a
 * parent cancels its whole tree. Real API and worker processes, the wire double as every model.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type AgentqClient } from '@agentq/client';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { processEnv, spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { deletePrefix, freshPrefix } from '../helpers/redis.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';

const prefix = freshPrefix('delegate');
let double: OpenAIDouble;
let dataDir: string;
let baseUrl: string;
let client: AgentqClient;

/** Children's models answer once this is let go (a test holds them running). */
let release: () => void = () => undefined;
let held = Promise.resolve();
const hold = () => {
  held = new Promise<void>((resolve) => (release = resolve));
};

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
      // The lead: starts three children, then answers with what they said.
      {
        match: (request) => prompt(request) === 'lead the work' && !lastTool(request),
        reply: delegateCall([
          { agent: 'coder', prompt: 'child one' },
          { agent: 'coder', prompt: 'child two' },
          { agent: 'writer', prompt: 'child three' },
        ]),
      },
      // A chain that delegates until the depth limit refuses, then does the work itself.
      {
        match: (request) => prompt(request).startsWith('go deeper') && !lastTool(request),
        reply: (request) => delegateCall([{ agent: 'coder', prompt: `${prompt(request)}!` }]),
      },
      {
        match: (request) => lastTool(request).startsWith('Nothing was started'),
        reply: { content: 'did it myself' },
      },
      {
        match: (request) => lastTool(request).startsWith('Every task you started has ended'),
        reply: (request) => ({ content: `gathered: ${lastTool(request)}` }),
      },
      // Children answer with their own prompt, once let go.
      { reply: async (request) => (await held, { content: `answer to ${prompt(request)}` }) },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-delegate-'));
  const env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'model-x',
    extra: {
      AGENTQ_CONFIG: configFile({
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['coder', 'writer'] },
          },
          coder: {
            description: 'codes',
            instructions: 'You code.',
            tools: ['delegate'],
            delegate: { agents: ['coder'], maxDepth: 3 },
          },
          writer: { description: 'writes', instructions: 'You write.' },
        },
      }),
    },
  });
  const api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/, 60_000))[1]!;
  await spawnAgentq(['worker', '--pools', 'lead'], env).waitFor(/serving lead/, 60_000);
  await spawnAgentq(['worker', '--pools', 'coder,writer'], env).waitFor(/serving/, 60_000);
  client = createClient({ baseUrl });
}, 120_000);

afterAll(async () => {
  await stopSpawned();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('starts three children on two pools, holds no worker while they run, and resumes with their answers', async () => {
  hold();
  const [id] = await client.submit([{ prompt: 'lead the work', agent: 'lead' }]);
  await waitForEvent(baseUrl, id!, 'task.waiting');
  const waiting = await client.get(id!);
  expect(waiting.status).toBe('waiting');
  expect(waiting.waitingFor).toMatchObject({ kind: 'children', children: expect.any(Array) });
  const children = waiting.waitingFor?.kind === 'children' ? waiting.waitingFor.children : [];
  expect(children).toHaveLength(3);
  expect(waiting.children?.map((child) => child.agent)).toEqual(['coder', 'coder', 'writer']);
  // The lead's pool runs nothing for it while its children run.
  const pools = await (await fetch(`${baseUrl}/v1/pools`)).json();
  expect(pools.pools.find((pool: { name: string }) => pool.name === 'lead').counts.active).toBe(0);
  for (const child of children) {
    const view = await client.get(child);
    expect(view).toMatchObject({ parentId: id, rootId: id, depth: 1 });
  }
  release();
  const events = await waitForEnd(baseUrl, id!);
  expect(events.at(-1)!.event).toBe('task.completed');
  const result = (await client.get(id!)).result ?? '';
  for (const text of ['child one', 'child two', 'child three']) expect(result).toContain(`answer to ${text}`);
  for (const child of children) expect(result).toContain(child);
  // It waited once, and its call was answered once.
  expect(events.filter((event) => event.event === 'task.waiting')).toHaveLength(1);
}, 120_000);

it('lets a child delegate in turn, and answers a call past the depth limit to the model', async () => {
  release();
  const [id] = await client.submit([{ prompt: 'go deeper', agent: 'coder' }]);
  const events = await waitForEnd(baseUrl, id!);
  expect(events.at(-1)!.event).toBe('task.completed');
  // depth 1 and 2 started; the call at depth 3 (a child 4 below) was refused: its task did the work itself.
  const [one] = (await client.get(id!)).children ?? [];
  const [two] = (await client.get(one!.id)).children ?? [];
  const [three] = (await client.get(two!.id)).children ?? [];
  expect((await client.get(three!.id)).depth).toBe(3);
  expect((await client.get(three!.id)).children ?? []).toHaveLength(0);
  expect((await client.get(three!.id)).result).toBe('did it myself');
  expect((await client.get(id!)).result).toContain('gathered:');
  const refused = double.requests.find((request) => lastTool(request).startsWith('Nothing was started'));
  expect(lastTool(refused!)).toMatch(/at most 3 is allowed/);
}, 120_000);

it('cancels every running descendant with its parent, in under a second', async () => {
  hold();
  const [id] = await client.submit([{ prompt: 'lead the work', agent: 'lead' }]);
  await waitForEvent(baseUrl, id!, 'task.waiting');
  const children = (await client.get(id!)).children!.map((child) => child.id);
  const started = performance.now();
  await client.cancel(id!);
  await expect
    .poll(async () => Promise.all(children.map(async (child) => (await client.get(child)).status)), {
      timeout: 1_000,
      interval: 20,
    })
    .toEqual(['cancelled', 'cancelled', 'cancelled']);
  console.log(`lead and its 3 children cancelled in ${Math.round(performance.now() - started)} ms`);
  expect((await client.get(id!)).status).toBe('cancelled');
  release();
}, 120_000);

/**
 * A `delegate` call's children are made exactly once, through a crash. The lead's worker reaches Redis
 * through a proxy that lets its writes through up to the one that creates the children, then holds every
 * write after it: the worker is left right after the children exist and before its run pauses (nothing
 * after reaches Redis), and is then SIGKILLed. Another worker takes the job up again; its run calls
 * `delegate` again, from its journal. There must be exactly 3 children, each run once, and the lead
 * completes once. Real API and worker processes, real Redis, the wire double as every model.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '@agentq/client';
import { startOpenAIDouble, type DoubleRequest, type OpenAIDouble } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFreezingProxy, type FreezingProxy } from '../helpers/freezing-proxy.js';
import { processEnv, spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';

/** A killed worker's job is taken up again this long after its last lock renewal. */
const LOCK_MS = 2_000;
const prefix = freshPrefix('delegate-crash');
let double: OpenAIDouble;
let dataDir: string;
let env: Record<string, string>;
let baseUrl: string;
let proxy: FreezingProxy;

const prompt = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const lastTool = (request: DoubleRequest) =>
  String(request.messages.findLast((message) => message.role === 'tool')?.content ?? '');

beforeAll(async () => {
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => prompt(request) === 'lead the work' && !lastTool(request),
        reply: {
          toolCalls: [
            {
              id: 'd1',
              name: 'delegate',
              arguments: {
                tasks: [
                  { agent: 'coder', prompt: 'child one' },
                  { agent: 'coder', prompt: 'child two' },
                  { agent: 'writer', prompt: 'child three' },
                ],
              },
            },
          ],
        },
      },
      {
        match: (request) => lastTool(request).startsWith('Every task you started has ended'),
        reply: (request) => ({ content: `gathered: ${lastTool(request)}` }),
      },
      { reply: (request) => ({ content: `answer to ${prompt(request)}` }) },
    ],
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-delegate-crash-'));
  env = await processEnv({
    prefix,
    dataDir,
    modelURL: double.baseURL,
    model: 'model-x',
    extra: {
      AGENTQ_JOB_LOCK_MS: String(LOCK_MS),
      AGENTQ_CONFIG: configFile({
        agents: {
          lead: {
            description: 'leads',
            instructions: 'You lead.',
            tools: ['delegate'],
            delegate: { agents: ['coder', 'writer'] },
          },
          coder: { description: 'codes', instructions: 'You code.' },
          writer: { description: 'writes', instructions: 'You write.' },
        },
      }),
    },
  });
  const api = spawnAgentq(['api'], env);
  baseUrl = (await api.waitFor(/listening on (http[^\s"]+)/, 60_000))[1]!;
  await spawnAgentq(['worker', '--pools', 'coder,writer'], env).waitFor(/serving/, 60_000);
}, 120_000);

afterAll(async () => {
  await stopSpawned();
  await proxy?.close();
  await double?.close();
  await deletePrefix(prefix);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('makes each child once and completes the lead once when its worker dies right after making them', async () => {
  const redis = new URL(redisUrl());
  // The write that creates the children: it names the third child, and stores them `pending`.
  proxy = await startFreezingProxy(
    { host: redis.hostname, port: Number(redis.port) },
    (args) => args.some((arg) => arg.endsWith('.c1.3')) && args.includes('pending'),
  );
  redis.host = `${proxy.host}:${proxy.port}`;
  const frozen = spawnAgentq(['worker', '--pools', 'lead'], { ...env, REDIS_URL: redis.toString() });
  await frozen.waitFor(/serving lead/, 60_000);

  const client = createClient({ baseUrl });
  const [id] = await client.submit([{ prompt: 'lead the work', agent: 'lead' }]);
  await proxy.frozen;
  await frozen.stop('SIGKILL');
  const direct = new Redis(redisUrl());
  try {
    const keys = await direct.keys(`${prefix}:*${id}.c*`);
    // Made, and nothing after: not listed as the lead's children, the lead not waiting.
    expect((await client.get(id!)).status).toBe('running');
    expect((await client.get(id!)).children ?? []).toHaveLength(0);
    console.log(`after the kill: ${keys.length} keys of children`);

    await spawnAgentq(['worker', '--pools', 'lead'], env).waitFor(/serving lead/, 60_000);
    const events = await waitForEnd(baseUrl, id!);
    expect(events.at(-1)!.event).toBe('task.completed');
    expect(events.filter((event) => event.event === 'task.completed')).toHaveLength(1);
    const lead = await client.get(id!);
    expect(lead.children?.map((child) => [child.id, child.status])).toEqual([
      [`${id}.c1.1`, 'completed'],
      [`${id}.c1.2`, 'completed'],
      [`${id}.c1.3`, 'completed'],
    ]);
    // No other child was ever made, and each child's model was asked once.
    const records = (await direct.keys(`${prefix}:*${id}.c*`)).filter((key) => !/\.c\d+\.\d+[:}]/.test(key));
    console.log(`children's records: ${records.length}`);
    for (const text of ['child one', 'child two', 'child three'])
      expect(double.requests.filter((request) => prompt(request) === text)).toHaveLength(1);
    const gathered = double.requests.filter((request) =>
      lastTool(request).startsWith('Every task you started has ended'),
    );
    expect(gathered).toHaveLength(1);
    expect(lead.result).toMatch(/answer to child one[\s\S]*answer to child two[\s\S]*answer to child three/);
  } finally {
    direct.disconnect();
  }
}, 180_000);

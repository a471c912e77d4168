/**
 * The least-privilege Redis users of docs/redis-users.acl, loaded as written into a Redis of the
 * test's own: the API and a worker run a task through them, and what they must not do is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '@agentq/api';
import { loadConfig } from '@agentq/config';
import { startOpenAIDouble, type OpenAIDouble } from '@agentq/llm';
import { startWorker, type WorkerHandle } from '@agentq/worker';
import { freePort } from '../setup/redis-server.js';
import { waitForEnd } from '../helpers/sse.js';

let server: ChildProcess;
let port: number;
let dataDir: string;
let double: OpenAIDouble;
let api: ApiHandle | undefined;
let worker: WorkerHandle | undefined;
const secrets = { '<api password>': `api-${process.pid}-secret`, '<worker password>': `worker-${process.pid}-secret` };

beforeAll(async () => {
  let acl = await readFile(new URL('../../docs/redis-users.acl', import.meta.url), 'utf8');
  for (const [placeholder, secret] of Object.entries(secrets)) acl = acl.replaceAll(placeholder, secret);
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-acl-'));
  const aclFile = path.join(dataDir, 'users.acl');
  await writeFile(
    aclFile,
    `${acl
      .split('\n')
      .filter((line) => line.startsWith('user '))
      .join('\n')}\n`,
  );
  port = await freePort();
  server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--aclfile', aclFile],
    { stdio: 'ignore' },
  );
  const admin = new Redis({
    port,
    username: 'agentq-api',
    password: secrets['<api password>'],
    retryStrategy: (times) => (times > 100 ? null : 20),
  });
  admin.on('error', () => undefined);
  await admin.ping();
  admin.disconnect();
  double = await startOpenAIDouble({
    rules: [
      {
        match: (request) => !request.messages.some((message) => message.role === 'tool'),
        reply: { toolCalls: [{ name: 'bash', arguments: { command: 'echo through the ACL' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
});

afterAll(async () => {
  await worker?.close();
  await api?.close();
  await double?.close();
  server?.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

const urlOf = (user: string, password: string) => `redis://${user}:${password}@127.0.0.1:${port}`;

it('the API and a worker run a task as the least-privilege users, who can do nothing else', async () => {
  const common = {
    PORT: '0',
    AGENTQ_LOG_LEVEL: 'silent',
    AGENTQ_DATA_DIR: dataDir,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: 'm',
    AGENTQ_LLM_MAX_RETRIES: '0',
  };
  api = await startApi({
    config: loadConfig({ env: { ...common, REDIS_URL: urlOf('agentq-api', secrets['<api password>']) } }),
  });
  worker = await startWorker({
    config: loadConfig({ env: { ...common, REDIS_URL: urlOf('agentq-worker', secrets['<worker password>']) } }),
    pools: ['coder'],
    shutdownGraceMs: 200,
  });
  const response = await fetch(`${api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'hi', agent: 'coder' }] }),
  });
  const [{ id }] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  const events = await waitForEnd(api.url, id);
  expect(events.at(-1)!.event).toBe('task.completed');
  expect(events.find((event) => event.event === 'tool.result')!.data.data).toMatchObject({
    ok: true,
    output: 'through the ACL',
  });
  expect((await fetch(`${api.url}/admin/queues`)).status).toBe(200);

  const asWorker = new Redis(urlOf('agentq-worker', secrets['<worker password>']));
  try {
    for (const command of [
      ['flushall'],
      ['config', 'get', 'dir'],
      ['set', 'someone-else:key', '1'],
      ['keys', '*'],
      ['shutdown'],
    ]) {
      await expect(asWorker.call(command[0]!, ...command.slice(1)), command.join(' ')).rejects.toThrow(/NOPERM/);
    }
  } finally {
    asWorker.disconnect();
  }
  const anonymous = new Redis({
    port,
    lazyConnect: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  anonymous.on('error', () => undefined);
  await anonymous.connect();
  await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
  anonymous.disconnect();
});

/**
 * An agent declared in the configuration file alone, with an MCP server's tools, through the real loop:
 * the API, a worker of that pool, the OpenAI wire double. The server runs in the jail: not root, no
 * worker environment or keys, no Redis, none of the host's files but its own folder. A server that dies
 * fails the call it served with a message for the model, and is started again for the next;
 * `tools/list_changed` is honoured.
 */
import { chmodSync, cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { configFile, tenantsEnv } from '../helpers/config-file.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { redisUrl } from '../helpers/redis.js';

let stack: Stack | undefined;
afterEach(async () => {
  delete process.env.AGENTQ_PROBE_WORKER_SECRET;
  await stack?.close();
  stack = undefined;
});

/** The fixture server in a folder of its own, readable by the unprivileged uid its jail runs as. */
function serverFolder(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-mcp-probe-'));
  cpSync(new URL('../fixtures/mcp-probe/', import.meta.url), dir, { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(path.join(dir, 'server.mjs'), 0o644);
  return dir;
}

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool');
const repo = path.resolve(new URL('../..', import.meta.url).pathname);

it('runs an agent the file declares, whose MCP server is jailed: not root, no keys, no Redis, no host files', async () => {
  const dir = serverFolder();
  // The worker's own environment holds a key: its servers must not see it.
  process.env.AGENTQ_PROBE_WORKER_SECRET = 'sk-worker-secret';
  const redisPort = Number(new URL(redisUrl()).port);
  const script = [
    { name: 'probe_probe', arguments: { redisPort, paths: [repo, '/root', '/home', dir] } },
    { name: 'probe_crash', arguments: {} },
    { name: 'probe_add', arguments: { a: 2, b: 3 } },
    { name: 'probe_flood', arguments: {} },
    { name: 'probe_grow', arguments: {} },
  ];
  stack = await startStack({
    pools: ['notes'],
    env: {
      OPENAI_API_KEY: 'sk-worker-secret',
      AGENTQ_CONFIG: configFile({
        agents: {
          notes: {
            description: 'keeps notes with the probe server',
            instructions: 'You keep notes. Use the probe tools.',
            tools: ['probe', 'memory_get'],
          },
        },
        mcpServers: { probe: { command: 'node', args: ['server.mjs'], dir, env: { PROBE_MODE: 'test' } } },
      }),
    },
    rules: [
      ...script.map((call, index) => ({
        match: (request: DoubleRequest) => toolResults(request).length === index,
        reply: { toolCalls: [{ id: `c${index}`, ...call }] },
      })),
      { reply: (request: DoubleRequest) => ({ content: `done: ${String(toolResults(request).at(-1)?.content)}` }) },
    ],
  });
  const [taskId] = await stack.submit([{ prompt: 'probe yourself', agent: 'notes' }]);
  const events = (await waitForEnd(stack.api.url, taskId!)).map((message) => message.data);
  expect(events.at(-1)!.type).toBe('task.completed');

  // The model saw the server's tools with the server's name in theirs, its descriptions and schemas.
  const first = stack.double.requests[0]!;
  const offered = (first.tools ?? []).map((tool) => tool.function.name);
  expect(offered).toEqual(
    expect.arrayContaining(['probe_probe', 'probe_add', 'probe_crash', 'probe_grow', 'memory_get']),
  );
  expect(offered).not.toContain('probe_later');
  expect(String(first.messages[0]!.content)).toContain('You keep notes.');

  const results = toolResults(stack.double.requests.at(-1)!).map((message) => String(message.content));
  const probe = JSON.parse(results[0]!) as {
    uid: number;
    env: string[];
    redis: boolean;
    seen: Record<string, unknown>;
  };
  expect(probe.uid).not.toBe(0);
  expect(probe.env).toContain('PROBE_MODE');
  for (const secret of ['AGENTQ_PROBE_WORKER_SECRET', 'OPENAI_API_KEY', 'REDIS_URL', 'AGENTQ_CONFIG'])
    expect(probe.env).not.toContain(secret);
  expect(probe.redis).toBe(false);
  expect(probe.seen[repo]).toBe('absent');
  expect(probe.seen['/root']).toBe('absent');
  expect(probe.seen[dir]).toBeGreaterThan(0);
  // Its death fails the call it served, saying what to do; the next call starts it again.
  expect(results[1]).toMatch(/The MCP server "probe" failed while it ran crash: .*started again on the next call/);
  expect(results[2]).toBe('5');
  // A server that floods its stdout past the bound of an answer (AGENTQ_MCP_ANSWER_MB) is ended: the worker
  // lives on, the call fails telling the model to ask for less.
  expect(results[3]).toMatch(/The MCP server "probe" answered flood with more than 4194304 bytes, .*Ask it for less/);
  expect(results[4]).toBe('grown');

  // A later run of the agent sees the tool the server added (tools/list_changed).
  const [second] = await stack.submit([{ prompt: 'again', agent: 'notes' }]);
  await waitForEnd(stack.api.url, second!);
  const later = stack.double.requests.find(
    (request) => request.messages.some((message) => message.content === 'again') && request.tools?.length,
  );
  expect((later?.tools ?? []).map((tool) => tool.function.name)).toContain('probe_later');
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.agent).toBe('notes');
});

it("gives each tenant a server of its own with its own secret, and a task-scoped server the task's folder by name", async () => {
  const dir = serverFolder();
  const probe = { command: 'node', args: ['server.mjs'], dir };
  const env = tenantsEnv(
    {
      acme: { keys: ['key-acme'] },
      globex: { keys: ['key-globex'] },
      initech: { keys: ['key-initech'] },
    },
    {
      agents: {
        notes: { description: 'keeps notes', instructions: 'Use the probe.', tools: ['probe'] },
        scratch: { description: 'works on files', instructions: 'Use the probe.', tools: ['local'] },
      },
      mcpServers: {
        probe: { ...probe, env: { PROBE_TOKEN: { tenantSecret: 'PROBE_TOKEN' } } },
        // It starts in its own folder, given the task's by name (AGENTQ_TASK_DIR, and in its args).
        local: { ...probe, args: ['server.mjs', '--task', '${AGENTQ_TASK_DIR}'], scope: 'task' },
      },
    },
  );
  // The tenants' secrets: acme's and globex's own; initech has none, so no probe server for it.
  const file = JSON.parse(readFileSync(env.AGENTQ_CONFIG!, 'utf8')) as {
    tenants: Record<string, Record<string, unknown>>;
  };
  file.tenants.acme!.secrets = { PROBE_TOKEN: { env: 'ACME_PROBE_TOKEN' } };
  file.tenants.globex!.secrets = { PROBE_TOKEN: { env: 'GLOBEX_PROBE_TOKEN' } };
  writeFileSync(env.AGENTQ_CONFIG!, JSON.stringify(file));
  const probeCall = (name: string) => ({
    match: (request: DoubleRequest) => toolResults(request).length === 0 && (request.tools ?? []).length > 0,
    reply: (request: DoubleRequest) => ({
      toolCalls: [
        {
          id: 'p1',
          name: (request.tools ?? []).find((tool) => tool.function.name.endsWith('_probe'))?.function.name ?? name,
          arguments: {},
        },
      ],
    }),
  });
  stack = await startStack({
    pools: ['notes', 'scratch'],
    env: { ...env, ACME_PROBE_TOKEN: 'acme-secret', GLOBEX_PROBE_TOKEN: 'globex-secret' },
    rules: [
      probeCall('probe_probe'),
      { reply: (request: DoubleRequest) => ({ content: String(toolResults(request).at(-1)?.content ?? 'no tools') }) },
    ],
  });
  const run = async (key: string, agent: string) => {
    const response = await fetch(`${stack!.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: `probe as ${key}`, agent }] }),
    });
    const { tasks } = (await response.json()) as { tasks: Array<{ id: string }> };
    await waitForEnd(stack!.api.url, tasks[0]!.id, { authorization: `Bearer ${key}` });
    const view = (await (
      await fetch(`${stack!.api.url}/v1/tasks/${tasks[0]!.id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as TaskView;
    return { id: tasks[0]!.id, result: view.result ?? '', status: view.status, error: view.error?.message };
  };
  const seen = async (key: string, agent: string) => {
    const { id, result } = await run(key, agent);
    return {
      id,
      ...(JSON.parse(result) as {
        uid: number;
        home: string;
        cwd: string;
        taskDir: string | null;
        argv: string[];
        token: string | null;
      }),
    };
  };
  const acme = await seen('key-acme', 'notes');
  const globex = await seen('key-globex', 'notes');
  expect(acme.token).toBe('acme-secret');
  expect(globex.token).toBe('globex-secret');
  // Not one process: each its own folder (its HOME, set when its process started; and a host uid of its own).
  expect(acme.home).not.toBe(globex.home);
  // The same tenant's next task is served by the process it started (kept, not started again).
  expect((await seen('key-acme', 'notes')).home).toBe(acme.home);
  // A tenant without the secret the server needs cannot run the agent (the server is not optional): said at once.
  const initech = await run('key-initech', 'notes');
  expect(initech.status).toBe('failed');
  expect(initech.error).toMatch(/The MCP server "probe" cannot start: tenant initech has no secret PROBE_TOKEN/);
  // A task-scoped server starts in its own folder and is given its task's.
  const scoped = await seen('key-acme', 'scratch');
  expect(scoped.cwd).toBe(dir);
  expect(scoped.taskDir).toBe(path.join(stack.dataDir, 'work', scoped.id));
  expect(scoped.argv).toEqual(['--task', scoped.taskDir]);
  expect(scoped.home).not.toBe(scoped.taskDir);
  // Each HOME is the folder the docs name for its scope (docs/agents-and-tools.md, "Where it may write").
  const docs = readFileSync(path.join(repo, 'docs/agents-and-tools.md'), 'utf8');
  const documented = (scope: string, names: Record<string, string>) => {
    const template = new RegExp(`\`<AGENTQ_DATA_DIR>/(mcp/${scope}/[^\`]+)\``).exec(docs)?.[1];
    expect(template, `docs/agents-and-tools.md names no HOME for scope: ${scope}`).toBeDefined();
    return path.join(
      stack!.dataDir,
      template!.replace(/<([\w ]+)>/g, (_, name: string) => names[name] ?? `<${name}>`),
    );
  };
  expect(acme.home).toBe(documented('worker', { agent: 'notes', tenant: 'acme', server: 'probe' }));
  expect(scoped.home).toBe(documented('task', { 'task id': scoped.id, server: 'local' }));
});

/**
 * An agent declared in the configuration file alone, with an MCP server's tools, through the real loop:
 * the API, a worker of that pool, the OpenAI wire double. The server runs in the jail: not root, no
 * worker environment or keys, no Redis, none of the host's files but its own folder. A server that dies
 * fails the call it served with a message for the model, and is started again for the next;
 * `tools/list_changed` is honoured.
 */
import { chmodSync, cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
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
  expect(results[3]).toBe('grown');

  // A later run of the agent sees the tool the server added (tools/list_changed).
  const [second] = await stack.submit([{ prompt: 'again', agent: 'notes' }]);
  await waitForEnd(stack.api.url, second!);
  const later = stack.double.requests.find(
    (request) => request.messages.some((message) => message.content === 'again') && request.tools?.length,
  );
  expect((later?.tools ?? []).map((tool) => tool.function.name)).toContain('probe_later');
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.agent).toBe('notes');
});

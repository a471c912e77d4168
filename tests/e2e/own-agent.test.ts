/**
 * What a user does to add an agent, done as a user does it: edit a configuration file (an agent with its
 * own instructions, model and an MCP server's tools), check it with `agentq config check`, start
 * `agentq worker --pools planner,notes` as real processes, and submit a task with no agent: the planner
 * routes it to the new agent by its description, which calls the MCP tool and answers with its result.
 */
import { chmodSync, cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { spawnAgentq } from '../helpers/processes.js';
import { waitForEnd } from '../helpers/sse.js';

let fleet: Fleet | undefined;
afterAll(() => fleet?.stop());

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const toolResult = (request: DoubleRequest) => request.messages.find((message) => message.role === 'tool');
const DESCRIPTION = 'adds numbers with the calculator service';

/** A user's folder: the configuration file, the agent's prompt, the MCP server's files. */
function userFolder(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-own-agent-'));
  chmodSync(dir, 0o755);
  cpSync(new URL('../fixtures/mcp-probe/', import.meta.url), path.join(dir, 'calculator'), { recursive: true });
  chmodSync(path.join(dir, 'calculator'), 0o755);
  writeFileSync(path.join(dir, 'sums.md'), 'You add numbers. Use the calculator tools, then say the sum.');
  writeFileSync(
    path.join(dir, 'agentq.config.yaml'),
    [
      'agents:',
      '  sums:',
      `    description: ${DESCRIPTION}`,
      '    instructions: { file: sums.md }',
      '    model: sums-model',
      '    tools: [calculator]',
      'mcpServers:',
      '  calculator: { command: node, args: [server.mjs], dir: calculator }',
      '',
    ].join('\n'),
  );
  return dir;
}

it('runs an agent added by editing the file alone, routed to by the planner from its description', async () => {
  const dir = userFolder();
  const file = path.join(dir, 'agentq.config.yaml');
  const check = spawnAgentq(['config', 'check', file], {});
  expect(await check.exited).toBe(0);
  expect(check.output()).toMatch(/ok: .*agentq\.config\.yaml \(1 agent: sums\)/);

  fleet = await startFleet({
    name: 'own-agent',
    model: 'base-model',
    workers: 1,
    pools: 'planner,sums',
    env: { AGENTQ_CONFIG: file },
    rules: [
      {
        // The planner routes by the description it was given.
        match: (request) => system(request).startsWith('You are the planner') && system(request).includes(DESCRIPTION),
        reply: { content: '```json\n{"plan":[{"id":"1","agent":"sums","task":"add 2 and 3","need":[]}]}\n```' },
      },
      {
        match: (request) => request.model === 'sums-model' && !toolResult(request),
        reply: { toolCalls: [{ id: 'c1', name: 'calculator_add', arguments: { a: 2, b: 3 } }] },
      },
      {
        match: (request) => request.model === 'sums-model',
        reply: (request) => ({ content: `The sum is ${String(toolResult(request)?.content)}.` }),
      },
      { reply: (request) => ({ content: `Final: ${String(request.messages.at(-1)?.content).slice(-40)}` }) },
    ],
  });
  const response = await fetch(`${fleet.baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ prompt: 'What is 2 + 3?' }] }),
  });
  const { tasks } = (await response.json()) as { tasks: Array<{ id: string }> };
  await waitForEnd(fleet.baseUrl, tasks[0]!.id);
  const root = (await (await fetch(`${fleet.baseUrl}/v1/tasks/${tasks[0]!.id}`)).json()) as TaskView;
  expect(root.status).toBe('completed');
  const [child] = root.children ?? [];
  const subtask = (await (await fetch(`${fleet.baseUrl}/v1/tasks/${child?.id}`)).json()) as TaskView;
  expect(subtask).toMatchObject({ agent: 'sums', status: 'completed', result: 'The sum is 5.' });
  // The agent's own instructions and model; the MCP tool under its server's name.
  const asked = fleet.double.requests.find((request) => request.model === 'sums-model')!;
  expect(system(asked)).toBe('You add numbers. Use the calculator tools, then say the sum.');
  expect((asked.tools ?? []).map((tool) => tool.function.name)).toContain('calculator_add');
  // The pools page shows the agent with its description.
  const pools = (await (await fetch(`${fleet.baseUrl}/v1/pools`)).json()) as {
    pools: Array<{ name: string; description: string }>;
  };
  expect(pools.pools.map(({ name, description }) => ({ name, description }))).toContainEqual({
    name: 'sums',
    description: DESCRIPTION,
  });
});

it('says what is wrong with a file, and refuses a variable the file replaced, naming its place', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-bad-config-'));
  const file = path.join(dir, 'agentq.config.yaml');
  writeFileSync(file, 'agents:\n  sums:\n    description: x\n    instructions: y\n    tools: [abacus]\n');
  const bad = spawnAgentq(['config', 'check', file], {});
  expect(await bad.exited).toBe(2);
  expect(bad.output()).toMatch(/agents\.sums\.tools\.0: "abacus" is neither a built-in tool/);
  const replaced = spawnAgentq(['worker', '--pools', 'casual'], { AGENTQ_MODEL_CASUAL: 'small' });
  expect(await replaced.exited).toBe(2);
  expect(replaced.output()).toMatch(/AGENTQ_MODEL_CASUAL: now agents\.casual\.model in the configuration file/);
  const unknown = spawnAgentq(['worker', '--pools', 'sums'], {});
  expect(await unknown.exited).toBe(2);
  expect(unknown.output()).toMatch(/Unknown pool\(s\): sums\. Pools: planner, coder, file, casual, web/);
});

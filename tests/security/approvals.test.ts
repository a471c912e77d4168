/**
 * A hostile model against approvals, through the real API and a real worker process (tools in the
 * jail). The model picks its calls' ids, the URLs it fetches and how it spells paths; whatever it
 * picks, a call an agent's rules hold does not run until a person approved that very call:
 *
 * - two calls under one id are two calls, each decided on its own; an id too long or odd for the API
 *   to name is replaced by one it can;
 * - a fetch of a listed host that redirects off the list is not followed there;
 * - a path rule reads the path the file tools will open (`./`, `..`, links), and a fence block that
 *   saves a file passes the rules of a `write_file` of it; an MCP tool's path, whose tool cannot be
 *   asked how it resolves it, is read in every spelling of it.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type TaskView } from '@agentq/client';
import { CALL_ID_PATTERN } from '@agentq/contract';
import type { DoubleRequest, DoubleToolCall } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEvent, type SseMessage } from '../helpers/sse.js';

let fleet: Fleet;
let client: ReturnType<typeof createClient>;
/** The host the fetcher may reach without approval (127.0.0.1), and another (127.0.0.2) that records what reached it. */
let allowed: Server;
let elsewhere: Server;
const reachedElsewhere: string[] = [];
/** The folder of a stdio MCP server whose `write` tool writes a file of its task. */
const mcpFolder = mkdtempSync(path.join(tmpdir(), 'agentq-mcp-fs-'));

/** The server, in node with no dependency: it joins a path to its task's folder, as a server may. */
const FS_SERVER = `const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const schema = { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path'] };
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  if (message.method === 'initialize')
    send({ id: message.id, result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fs', version: '1.0.0' } } });
  else if (message.method === 'tools/list')
    send({ id: message.id, result: { tools: [{ name: 'write', description: 'Writes a file', inputSchema: schema }] } });
  else if (message.method === 'tools/call') {
    const target = path.join(process.env.AGENTQ_TASK_DIR, message.params.arguments.path);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, message.params.arguments.content || 'x');
    send({ id: message.id, result: { content: [{ type: 'text', text: 'wrote ' + path.relative(process.env.AGENTQ_TASK_DIR, target) }] } });
  } else send({ id: message.id, error: { code: -32601, message: 'no method ' + message.method } });
});
`;

/** What the model answers first, by the task's prompt. */
const attacks = new Map<string, { toolCalls?: DoubleToolCall[]; content?: string }>();
const prompt = (request: DoubleRequest) => String(request.messages.find((one) => one.role === 'user')?.content ?? '');
const answered = (request: DoubleRequest) =>
  request.messages.some((one) => one.role === 'tool' || (one.role === 'user' && one !== request.messages[1]));
const bash = (command: string, id?: string): DoubleToolCall => ({
  name: 'bash',
  arguments: { command },
  ...(id === undefined ? {} : { id }),
});
const writeFile = (path: string): DoubleToolCall => ({ name: 'write_file', arguments: { path, content: 'x' } });
const deployRule = { tool: 'write_file', argument: 'path', matches: '^deploy/' };

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  elsewhere = createServer((request: IncomingMessage, response) => {
    reachedElsewhere.push(request.url ?? '');
    response.end('collected');
  });
  const elsewherePort = await listen(elsewhere, '127.0.0.2');
  allowed = createServer((_request, response) => {
    response.writeHead(302, { location: `http://127.0.0.2:${elsewherePort}/collect?token=from-the-query` });
    response.end();
  });
  const allowedPort = await listen(allowed, '127.0.0.1');
  // The server's folder is read by the task's jail user.
  chmodSync(mcpFolder, 0o755);
  writeFileSync(path.join(mcpFolder, 'server.js'), FS_SERVER);
  attacks.set('redirect', {
    toolCalls: [{ name: 'http_fetch', arguments: { url: `http://127.0.0.1:${allowedPort}/go` } }],
  });

  fleet = await startFleet({
    name: 'approval-attacks',
    model: 'hostile-model',
    workers: 1,
    pools: 'ops,fetcher,files,fencer,mcpfs',
    env: {
      // The two hosts of the redirect are on loopback.
      AGENTQ_FETCH_PRIVATE: 'true',
      AGENTQ_CONFIG: configFile({
        mcpServers: { fs: { command: 'node', args: ['server.js'], dir: mcpFolder, scope: 'task' } },
        agents: {
          ops: {
            description: 'runs commands a person approves',
            instructions: 'You run commands.',
            tools: ['bash'],
            approvals: { rules: [{ tool: 'bash' }] },
          },
          fetcher: {
            description: 'fetches from one host without asking',
            instructions: 'You fetch.',
            tools: ['http_fetch'],
            approvals: { rules: [{ tool: 'http_fetch', unlessHosts: ['127.0.0.1'] }] },
          },
          files: {
            description: 'writes files; deploy/ needs a person',
            instructions: 'You write files.',
            tools: ['bash', 'write_file'],
            approvals: { rules: [deployRule] },
          },
          fencer: {
            description: 'a small model writing code blocks',
            instructions: 'You write code blocks.',
            protocol: 'fences',
            tools: ['bash', 'python', 'write_file'],
            approvals: { rules: [deployRule, { tool: 'bash' }] },
          },
          mcpfs: {
            description: "writes files through an MCP server's tool; deploy/ needs a person",
            instructions: 'You write files.',
            tools: ['fs'],
            approvals: { rules: [{ tool: 'fs_write', argument: 'path', matches: '^deploy/' }] },
          },
        },
      }),
    },
    rules: [
      {
        match: (request) => !answered(request) && attacks.has(prompt(request)),
        reply: (request) => attacks.get(prompt(request))!,
      },
      { reply: { content: 'done' } },
    ],
  });
  client = createClient({ baseUrl: fleet.baseUrl });
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
  allowed?.close();
  elsewhere?.close();
  rmSync(mcpFolder, { recursive: true, force: true });
});

async function submit(agent: string, text: string): Promise<string> {
  const [id] = await client.submit([{ prompt: text, agent }]);
  return id!;
}

/** The task once it waits for approval (the stream's text is printed if it ended instead). */
async function waiting(id: string): Promise<TaskView> {
  await waitForEvent(fleet.baseUrl, id, 'task.waiting');
  return client.get(id);
}

const heldCalls = (task: TaskView) => (task.waitingFor?.kind === 'approval' ? task.waitingFor.calls : []);
const files = async (id: string) => (await client.files.list(id)).files.map((file) => file.path).sort();
const toolOutputs = (events: SseMessage[]) =>
  events
    .filter((event) => event.event === 'tool.result')
    .map((event) => String((event.data.data as { output?: unknown }).output ?? ''));

describe('a hostile model against approvals', () => {
  it('gets one approval for one call, whatever ids it gives two calls', async () => {
    attacks.set('same id', {
      toolCalls: [bash('echo seen > seen.txt', 'dup'), bash('echo pwned > pwned.txt', 'dup')],
    });
    const id = await submit('ops', 'same id');
    const calls = heldCalls(await waiting(id));
    // Both are held, each under an id of its own.
    expect(calls.map((call) => call.arguments)).toEqual([
      JSON.stringify({ command: 'echo seen > seen.txt' }),
      JSON.stringify({ command: 'echo pwned > pwned.txt' }),
    ]);
    const [seen, pwned] = calls;
    // Approving the call the person read decides that call only.
    expect(await client.decide(id, { callId: seen!.id, approve: true })).toMatchObject({
      status: 'waiting',
      remaining: 1,
    });
    expect(seen!.id).not.toBe(pwned!.id);
    await client.decide(id, { callId: pwned!.id, approve: false, reason: 'no' });
    const events = await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).toEqual(['seen.txt']);
    expect(toolOutputs(events)[1]).toContain('a person rejected it: no');
    // The model reads each result under the id of its call, as its provider requires.
    const last = fleet.double.requests.findLast((request) => prompt(request) === 'same id')!;
    const asked = last.messages.find((one) => one.role === 'assistant')!.tool_calls as Array<{ id: string }>;
    const results = last.messages.filter((one) => one.role === 'tool').map((one) => one.tool_call_id);
    expect(asked.map((call) => call.id)).toEqual([seen!.id, pwned!.id]);
    expect(results).toEqual([seen!.id, pwned!.id]);
  });

  it('names every held call with an id the API takes, however long or odd the model made it', async () => {
    const long = `call_${'x'.repeat(295)}`;
    const odd = 'a/b?c#d "e"\n\u0000';
    attacks.set('odd ids', { toolCalls: [bash('echo long > long.txt', long), bash('echo odd > odd.txt', odd)] });
    const id = await submit('ops', 'odd ids');
    const calls = heldCalls(await waiting(id));
    expect(calls.map((call) => call.arguments)).toEqual([
      JSON.stringify({ command: 'echo long > long.txt' }),
      JSON.stringify({ command: 'echo odd > odd.txt' }),
    ]);
    // Each is decided under the id the task shows (no 400 for its length, no 409 for a shortened one).
    const decided: string[] = [];
    for (const call of calls)
      decided.push(
        await client.decide(id, { callId: call.id, approve: true }).then(
          (answer) => answer.status,
          (error: Error) => error.message.slice(0, 160),
        ),
      );
    expect(decided).toEqual(['waiting', 'queued']);
    for (const call of calls) expect(call.id).toMatch(CALL_ID_PATTERN);
    await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).toEqual(['long.txt', 'odd.txt']);
    // The model reads each result under the id its stored answer carries.
    const last = fleet.double.requests.findLast((request) => prompt(request) === 'odd ids')!;
    const asked = last.messages.find((one) => one.role === 'assistant')!.tool_calls as Array<{ id: string }>;
    const results = last.messages.filter((one) => one.role === 'tool').map((one) => one.tool_call_id);
    expect(asked.map((call) => call.id)).toEqual(calls.map((call) => call.id));
    expect(results).toEqual(calls.map((call) => call.id));
  });

  it('does not follow a redirect from a listed host to one that is not, nor send it the query', async () => {
    const id = await submit('fetcher', 'redirect');
    const events = await waitForEnd(fleet.baseUrl, id);
    expect(reachedElsewhere).toEqual([]);
    expect(toolOutputs(events)).toEqual([
      expect.stringMatching(/redirected to http:\/\/127\.0\.0\.2:\d+\/collect\?token=from-the-query.*approval/s),
    ]);
  });

  it('holds a path under deploy/ however it is spelt', async () => {
    attacks.set('spellings', {
      toolCalls: [writeFile('./deploy/a'), writeFile('x/../deploy/b'), writeFile('deploy//c'), writeFile('notes/d')],
    });
    const id = await submit('files', 'spellings');
    const calls = heldCalls(await waiting(id));
    expect(calls.map((call) => JSON.parse(call.arguments).path)).toEqual(['./deploy/a', 'x/../deploy/b', 'deploy//c']);
    for (const call of calls) await client.decide(id, { callId: call.id, approve: false });
    await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).toEqual(['notes/d']);
  });

  it('does not run a write through a link its own step planted to deploy/', async () => {
    attacks.set('link', {
      toolCalls: [bash('mkdir deploy && ln -s deploy innocent'), writeFile('innocent/e')],
    });
    const id = await submit('files', 'link');
    const events = await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).not.toContain('deploy/e');
    expect(toolOutputs(events)[1]).toMatch(/needs a person's approval/);
  });

  it("holds a fence block that saves under deploy/ and runs it, as write_file's rule says", async () => {
    attacks.set('fence', {
      content: "Here:\n```python:deploy/evil.py\nopen('pwned.txt', 'w').write('x')\n```\n",
    });
    const id = await submit('fencer', 'fence');
    const calls = heldCalls(await waiting(id));
    expect(calls).toEqual([
      expect.objectContaining({ name: 'python', rule: expect.stringMatching(/deploy\/evil\.py.*\^deploy\//) }),
    ]);
    expect(await files(id)).toEqual([]);
    await client.decide(id, { callId: calls[0]!.id, approve: false });
    await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).toEqual([]);
  });

  it("holds an MCP tool's path under deploy/ however it is spelt", async () => {
    const spellings = ['./deploy/a', 'deploy//b', 'x/../deploy/c', 'deploy/./d', '/deploy/e', 'deploy/f', 'notes/g'];
    attacks.set('mcp spellings', {
      toolCalls: spellings.map((spelling) => ({ name: 'fs_write', arguments: { path: spelling, content: 'x' } })),
    });
    const id = await submit('mcpfs', 'mcp spellings');
    const calls = heldCalls(await waiting(id));
    expect(calls.map((call) => JSON.parse(call.arguments).path)).toEqual(spellings.slice(0, 6));
    for (const call of calls) await client.decide(id, { callId: call.id, approve: false });
    await waitForEnd(fleet.baseUrl, id);
    expect(await files(id)).toEqual(['notes/g']);
  });
});

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { McpServers } from './mcp-servers.js';

let server: Server | undefined;
afterEach(() => server?.close());

it('reaches a remote server only through the egress rules of http_fetch: a local address is refused', async () => {
  let requests = 0;
  server = createServer((_request, response) => {
    requests++;
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const servers = new McpServers({
    homeRoot: '/nonexistent',
    timeoutMs: 5_000,
    outputLimit: 1_000,
    answerLimitBytes: 1 << 20,
  });
  const run = {
    agent: 'a',
    tenant: 't',
    taskId: 'x',
    workdir: '/nonexistent',
    prepareWorkdir: async () => undefined,
    servers: [{ name: 'remote', spec: { url, headers: { authorization: 'Bearer k' } } }],
    isolation: { kind: 'unavailable' as const, reason: 'not needed' },
    jail: { network: 'none' as const, limits: { processes: 1, memoryMb: 1, fileMb: 1, cpuSeconds: 1 } },
  };
  const refused = await servers.toolsFor(run);
  expect(refused.tools).toEqual([]);
  expect(refused.unavailable).toEqual([
    { server: 'remote', reason: expect.stringMatching(/private or local address \(127\.0\.0\.1\): refused/) },
  ]);
  expect(requests).toBe(0);
  // Allowed by the operator, the request is made (this one answers 500: the server is said not to start).
  const allowed = new McpServers({
    homeRoot: '/nonexistent',
    timeoutMs: 5_000,
    outputLimit: 1_000,
    answerLimitBytes: 1 << 20,
    allowPrivateNetwork: true,
  });
  const tried = await allowed.toolsFor(run);
  expect(tried.unavailable[0]?.reason).toMatch(/did not start/);
  expect(requests).toBeGreaterThan(0);
  await Promise.all([servers.close(), allowed.close()]);
});

it('calls a remote server over Streamable HTTP with its headers, once the operator allows its address', async () => {
  const authorizations: Array<string | undefined> = [];
  server = createServer((request, response) => {
    authorizations.push(request.headers.authorization);
    // Stateless: a server and a transport per request, as the SDK's examples do.
    const mcp = new McpServer({ name: 'remote-test', version: '1.0.0' });
    mcp.registerTool(
      'shout',
      { description: 'Says it louder', inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(request, response));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const servers = new McpServers({
    homeRoot: '/nonexistent',
    timeoutMs: 5_000,
    outputLimit: 1_000,
    answerLimitBytes: 1 << 20,
    allowPrivateNetwork: true,
  });
  const { tools, unavailable } = await servers.toolsFor({
    agent: 'a',
    tenant: 't',
    taskId: 'x',
    workdir: '/nonexistent',
    prepareWorkdir: async () => undefined,
    servers: [{ name: 'remote', spec: { url, headers: { authorization: 'Bearer tenant-key' } } }],
    isolation: { kind: 'unavailable', reason: 'not needed' },
    jail: { network: 'none', limits: { processes: 1, memoryMb: 1, fileMb: 1, cpuSeconds: 1 } },
  });
  expect(unavailable).toEqual([]);
  expect(tools.map((tool) => tool.name)).toEqual(['remote_shout']);
  const result = await tools[0]!.run(
    { text: 'hello' },
    {
      workdir: '/nonexistent',
      signal: new AbortController().signal,
      timeoutMs: 5_000,
      outputLimit: 1_000,
      isolation: { kind: 'unavailable', reason: 'x' },
    },
  );
  expect(result).toEqual({ ok: true, output: 'HELLO' });
  expect(new Set(authorizations)).toEqual(new Set(['Bearer tenant-key']));
  await servers.close();
});

it('ends a remote session whose own stream passes the bound of an answer, and starts another for the next call', async () => {
  const seen: string[] = [];
  let streamed = 0;
  let sessionEnded!: () => void;
  const ended = new Promise<void>((resolve) => (sessionEnded = resolve));
  server = createServer((request, response) => {
    void (async () => {
      seen.push(request.method!);
      if (request.method === 'DELETE') {
        sessionEnded();
        return void response.writeHead(200).end();
      }
      if (request.method === 'GET') {
        // The session's own stream: 64 MiB of one event that never ends.
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: ');
        const chunk = Buffer.alloc(1024 * 1024, 'x');
        while (streamed < 64 * 1024 * 1024 && !response.destroyed) {
          streamed += chunk.length;
          if (!response.write(chunk)) await Promise.race([once(response, 'drain'), once(response, 'close')]);
        }
        return;
      }
      let body = '';
      for await (const part of request) body += String(part);
      const message = JSON.parse(body) as { id?: number; method: string };
      if (message.id === undefined) return void response.writeHead(202).end();
      seen.push(message.method);
      const result =
        message.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } }
          : message.method === 'tools/list'
            ? { tools: [{ name: 'ping', inputSchema: { type: 'object' } }] }
            : { content: [{ type: 'text', text: 'pong' }] };
      response
        .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    })();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const servers = new McpServers({
    homeRoot: '/nonexistent',
    timeoutMs: 5_000,
    outputLimit: 1_000,
    answerLimitBytes: 1024 * 1024,
    allowPrivateNetwork: true,
  });
  const { tools } = await servers.toolsFor({
    agent: 'a',
    tenant: 't',
    taskId: 'x',
    workdir: '/nonexistent',
    prepareWorkdir: async () => undefined,
    servers: [{ name: 'remote', spec: { url, headers: {} } }],
    isolation: { kind: 'unavailable', reason: 'not needed' },
    jail: { network: 'none', limits: { processes: 1, memoryMb: 1, fileMb: 1, cpuSeconds: 1 } },
  });
  await ended;
  const result = await tools[0]!.run(
    {},
    {
      workdir: '/nonexistent',
      signal: new AbortController().signal,
      timeoutMs: 5_000,
      outputLimit: 1_000,
      isolation: { kind: 'unavailable', reason: 'x' },
    },
  );
  expect(result).toEqual({ ok: true, output: 'pong' });
  // Cut at the bound (and what the sockets held), the session ended, and the call started another.
  expect(streamed).toBeLessThan(32 * 1024 * 1024);
  expect(seen.filter((method) => method === 'initialize')).toHaveLength(2);
  await servers.close();
});

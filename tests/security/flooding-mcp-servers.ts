/**
 * MCP servers whose answers flood: 256 MB where a few KB are expected, or a stream that never ends.
 * A remote one (Streamable HTTP, stateless, JSON-RPC over POST) in the test's own process, which counts
 * what it managed to send of each flooded answer before its client stopped reading; and the source of
 * a stdio one for a worker's jail.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Bytes of one flooded answer: far past anything a worker should hold. */
export const FLOOD_BYTES = 256 * 1024 * 1024;

const TOOLS = [
  { name: 'dump', description: 'Answers with 256 MB of JSON', inputSchema: { type: 'object' } },
  { name: 'endless', description: 'Answers with an SSE stream that never ends', inputSchema: { type: 'object' } },
  { name: 'small', description: 'Answers in a few bytes', inputSchema: { type: 'object' } },
];

export interface FloodingServer {
  /** Its base URL: `/mcp` floods its tools' answers; `/flood-init` its `initialize`, `/flood-list` its `tools/list`. */
  url: string;
  /** What it sent of each flooded answer, in bytes, once its client stopped reading (or it sent all). */
  sent: number[];
  close(): Promise<void>;
}

export async function startFloodingServer(): Promise<FloodingServer> {
  const sent: number[] = [];
  const server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST') return void response.writeHead(request.method === 'DELETE' ? 200 : 405).end();
      let body = '';
      for await (const chunk of request) body += String(chunk);
      const message = JSON.parse(body) as { id?: number; method: string; params?: { name?: string } };
      if (message.id === undefined) return void response.writeHead(202).end();
      const head = `{"jsonrpc":"2.0","id":${message.id},"result":`;
      const where = new URL(request.url ?? '/', 'http://x').pathname;
      if (message.method === 'initialize') {
        const result = {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'f', version: '1' },
        };
        if (where !== '/flood-init') return answer(response, head, result);
        // Valid as an answer: its `instructions` are the flood.
        const { protocolVersion, capabilities, serverInfo } = result;
        const start = `${head}${JSON.stringify({ protocolVersion, capabilities, serverInfo }).slice(0, -1)},"instructions":"`;
        return void sent.push(await flood(response, 'application/json', start, '"}}'));
      }
      if (message.method === 'tools/list') {
        if (where !== '/flood-list') return answer(response, head, { tools: TOOLS });
        const start = `${head}{"tools":[{"name":"t","inputSchema":{"type":"object"},"description":"`;
        return void sent.push(await flood(response, 'application/json', start, '"}]}}'));
      }
      const text = `${head}{"content":[{"type":"text","text":"`;
      switch (message.params?.name) {
        case 'dump':
          return void sent.push(await flood(response, 'application/json', text, '"}]}}'));
        case 'endless':
          // One event whose data never ends, on a stream that stays open.
          return void sent.push(await flood(response, 'text/event-stream', `event: message\ndata: ${text}`));
        default:
          return answer(response, head, { content: [{ type: 'text', text: 'small answer' }] });
      }
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function answer(response: ServerResponse, head: string, result: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(`${head}${JSON.stringify(result)}}`);
}

/**
 * Writes `start`, then FLOOD_BYTES of `x` as fast as its client reads them, then `end`; without `end`,
 * keeps the answer open until the client goes. Resolves with the bytes written before the client went.
 */
async function flood(response: ServerResponse, contentType: string, start: string, end?: string): Promise<number> {
  response.writeHead(200, { 'content-type': contentType });
  const gone = once(response, 'close');
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  let written = 0;
  response.write(start);
  while (written < FLOOD_BYTES && !response.destroyed) {
    written += chunk.length;
    if (!response.write(chunk)) await Promise.race([once(response, 'drain'), gone]);
  }
  if (response.destroyed) return written;
  if (end) response.end(end);
  await gone;
  return written;
}

/**
 * A stdio MCP server (node, no dependency) whose `dump` writes a 256 MB line and `small` a few bytes.
 */
export const floodingStdioServer = `const readline = require('node:readline');
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const tools = [
  { name: 'dump', description: 'Answers with a 256 MB line', inputSchema: { type: 'object' } },
  { name: 'small', description: 'Answers in a few bytes', inputSchema: { type: 'object' } },
];
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  if (message.method === 'initialize')
    return send({ id: message.id, result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'f', version: '1' } } });
  if (message.method === 'tools/list') return send({ id: message.id, result: { tools } });
  if (message.params.name !== 'dump') return send({ id: message.id, result: { content: [{ type: 'text', text: 'small' }] } });
  process.stdout.write('{"jsonrpc":"2.0","id":' + message.id + ',"result":{"content":[{"type":"text","text":"');
  const chunk = 'x'.repeat(1024 * 1024);
  let left = ${FLOOD_BYTES / (1024 * 1024)};
  const pump = () => {
    while (left-- > 0) if (!process.stdout.write(chunk)) return process.stdout.once('drain', pump);
    process.stdout.write('"}]}}\\n');
  };
  pump();
});
`;

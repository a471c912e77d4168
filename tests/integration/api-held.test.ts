/**
 * The API holds against clients that hold it: a body is read only once its key was checked, a request's
 * headers must come within 10 s, and one address holds a bounded number of connections.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HEADERS_TIMEOUT_MS } from '@agentq/api';
import { startStack, type Stack } from '../helpers/stack.js';
import { tenantsEnv } from '../helpers/config-file.js';

let stack: Stack;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  stack = await startStack({
    pools: [],
    env: { ...tenantsEnv({ acme: { keys: ['key-acme'] } }), AGENTQ_CONNECTIONS_PER_ADDRESS: '20' },
  });
  port = Number(new URL(stack.api.url).port);
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await stack?.close();
});

/** A raw connection that sends `text` and keeps what it is answered; `closed` settles when the server closes it. */
function raw(text: string): { socket: Socket; answer: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  socket.write(text);
  return { socket, answer: () => answer, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

it('refuses a request without a key before reading its body', async () => {
  // 6 MB announced, none of it sent: the answer comes at once, not once a body arrived.
  const request = raw(
    `POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${6 * 1024 * 1024}\r\n\r\n{"tasks": [`,
  );
  await expect.poll(request.answer, { timeout: 5_000 }).toMatch(/^HTTP\/1\.1 401 /);
  request.socket.destroy();
});

it('closes a connection whose headers do not come within the headers timeout', async () => {
  const slow = raw('GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const started = Date.now();
  await slow.closed;
  expect(Date.now() - started).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 1_000);
  expect(Date.now() - started).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
}, 20_000);

it('holds at most AGENTQ_CONNECTIONS_PER_ADDRESS connections from one address, and says so to the next', async () => {
  // Each answered (so the server holds it), and kept open (keep-alive).
  const held = Array.from({ length: 20 }, () =>
    raw('GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer key-acme\r\n\r\n'),
  );
  for (const each of held) await expect.poll(each.answer).toMatch(/^HTTP\/1\.1 200 /);
  const refused = raw('GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer key-acme\r\n\r\n');
  await refused.closed;
  expect(refused.answer()).toMatch(
    /^HTTP\/1\.1 503 [\s\S]*holds 20 connections to the API already \(AGENTQ_CONNECTIONS_PER_ADDRESS\)/,
  );
  for (const each of held) each.socket.destroy();
  await Promise.all(held.map((each) => each.closed));
  // Once they closed, the address is served again.
  const me = await fetch(`${stack.api.url}/v1/me`, { headers: { authorization: 'Bearer key-acme' } });
  expect(me.status).toBe(200);
});

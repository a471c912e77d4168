import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sseFrame, SseStream } from './sse-stream.js';

const HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server whose every request is an SSE stream that `handle` writes. */
async function serve(
  handle: (stream: SseStream, request: http.IncomingMessage) => void | Promise<void>,
): Promise<number> {
  server = http.createServer((request, response) => void handle(new SseStream(request, response, HEADERS), request));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends `requests` on one raw connection; resolves with every byte the server sent until `until` holds or it closed. */
function exchange(
  port: number,
  requests: string,
  until: (text: string) => boolean = () => false,
): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(requests));
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (until(text)) {
        socket.destroy();
        resolve({ text, closed: false });
      }
    });
    socket.on('end', () => resolve({ text, closed: true }));
    socket.on('error', reject);
  });
}

const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);

/** GETs /first and /second pipelined on one connection; resolves with the two bodies once both ended. */
async function pipelinedBodies(port: number): Promise<[string, string]> {
  const { text } = await exchange(
    port,
    'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n',
    (seen) => seen.split('0\r\n\r\n').length === 3,
  );
  const [first, second] = text.split(/(?=HTTP\/1\.1 200)/);
  return [bodyOf(first!), bodyOf(second!)];
}

describe('an SSE stream', () => {
  it('over HTTP/1.1: each frame is one chunk, the end is the last chunk, and the connection is kept', async () => {
    const port = await serve((stream, request) => {
      stream.send(sseFrame(`data: ${request.url} é\n\n`));
      stream.send(sseFrame('data: two\n\n'));
      stream.end();
    });
    // Two requests, one after the other on the connection: the first's body ended where it said.
    const { text, closed } = await exchange(port, 'GET /a HTTP/1.1\r\nHost: x\r\n\r\n', (seen) =>
      seen.endsWith('0\r\n\r\n'),
    );
    expect(closed).toBe(false);
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text.toLowerCase()).toContain('transfer-encoding: chunked\r\n');
    // `é` is two bytes: the chunk's size counts bytes.
    expect(bodyOf(text)).toBe('d\r\ndata: /a \xc3\xa9\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n');
  });

  it('reads as a chunked body to an HTTP client, and the kept connection serves the next request', async () => {
    const port = await serve((stream, request) => {
      stream.send(sseFrame(`data: ${request.url}\n\n`));
      stream.end();
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ body: string; socket: net.Socket }>((resolve) =>
        http.get({ port, host: '127.0.0.1', path, agent }, (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ body, socket: response.socket }));
        }),
      );
    const first = await get('/first');
    const second = await get('/second');
    expect([first.body, second.body]).toEqual(['data: /first\n\n', 'data: /second\n\n']);
    expect(second.socket).toBe(first.socket);
    agent.destroy();
  });

  it('over HTTP/1.0: the frames as they are, and the end closes the connection', async () => {
    const port = await serve((stream) => {
      stream.send(sseFrame('data: one\n\n'));
      stream.end();
    });
    const { text, closed } = await exchange(port, 'GET / HTTP/1.0\r\n\r\n');
    expect(closed).toBe(true);
    expect(text.toLowerCase()).not.toContain('transfer-encoding');
    expect(bodyOf(text)).toBe('data: one\n\n');
  });

  it('a pipelined request waits for the one before it; its frames follow, framed, in order', async () => {
    let releaseFirst!: () => void;
    const firstMayEnd = new Promise<void>((resolve) => (releaseFirst = resolve));
    const port = await serve(async (stream, request) => {
      stream.send(sseFrame(`data: ${request.url} 1\n\n`));
      if (request.url === '/first') await firstMayEnd;
      else releaseFirst();
      stream.send(sseFrame(`data: ${request.url} 2\n\n`));
      stream.end();
    });
    expect(await pipelinedBodies(port)).toEqual([
      '10\r\ndata: /first 1\n\n\r\n10\r\ndata: /first 2\n\n\r\n0\r\n\r\n',
      '11\r\ndata: /second 1\n\n\r\n11\r\ndata: /second 2\n\n\r\n0\r\n\r\n',
    ]);
  });

  it('an ended stream writes nothing more, not even into the next response on its kept connection', async () => {
    let first: SseStream | undefined;
    const port = await serve((stream, request) => {
      if (request.url === '/first') {
        first = stream;
        stream.send(sseFrame('data: first\n\n'));
        stream.end();
        return;
      }
      // The connection is the second response's now (behind a proxy, maybe another user's).
      first!.send(sseFrame('data: late\n\n'));
      stream.send(sseFrame('data: second\n\n'));
      stream.end();
    });
    expect(await pipelinedBodies(port)).toEqual([
      'd\r\ndata: first\n\n\r\n0\r\n\r\n',
      'e\r\ndata: second\n\n\r\n0\r\n\r\n',
    ]);
  });

  it('drops what is sent once the client closed its side, without a write error', async () => {
    const clientErrors: string[] = [];
    let sentAfter!: () => void;
    const afterClose = new Promise<void>((resolve) => (sentAfter = resolve));
    const port = await serve((stream, request) => {
      stream.send(sseFrame('data: first\n\n'));
      // The client's FIN ends the connection on Node's side: a follower's next event finds it so.
      request.socket.once('end', () => {
        stream.send(sseFrame('data: after\n\n'));
        setImmediate(sentAfter);
      });
    });
    server!.on('clientError', (error: NodeJS.ErrnoException) => clientErrors.push(error.code ?? error.message));
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.setEncoding('latin1');
    let text = '';
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('first')) socket.end();
    });
    await afterClose;
    await new Promise((resolve) => socket.once('close', resolve));
    expect(bodyOf(text)).toBe('d\r\ndata: first\n\n\r\n');
    expect(clientErrors).toEqual([]);
  });

  it('counts what the client has not taken, and says when it was taken', async () => {
    const big = sseFrame(`data: ${'x'.repeat(512 * 1024)}\n\n`);
    let sent!: (backlog: number) => void;
    const backlogged = new Promise<number>((resolve) => (sent = resolve));
    let drained!: (backlog: number) => void;
    const taken = new Promise<number>((resolve) => (drained = resolve));
    const port = await serve(async (stream) => {
      // 32 MiB: more than the kernel's socket buffers take on a machine that allows them large.
      for (let index = 0; index < 64; index++) stream.send(big);
      sent(stream.backlog);
      await stream.drained();
      drained(stream.backlog);
      stream.end();
    });
    // The client connects and reads nothing until the server said how much waits.
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.pause();
    expect(await backlogged).toBeGreaterThan(16 * 1024 * 1024);
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    expect(await taken).toBeLessThan(1024 * 1024);
    socket.destroy();
    expect(received).toBeGreaterThan(0);
  });
});

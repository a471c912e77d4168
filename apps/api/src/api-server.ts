/**
 * The API's HTTP server, held against clients that hold it: a request's headers must arrive within
 * `HEADERS_TIMEOUT_MS` and its whole body within `REQUEST_TIMEOUT_MS` (Node looks every second; its
 * default is every 30 s), and one address holds at most `perAddress` connections at once, past which a
 * new one is answered 503 and closed. 2,000 slowloris connections stayed open 72 s with Node's defaults.
 * A response may take as long as it takes (an event stream follows a task for hours): the timeouts bound
 * what the client sends, not what it is sent.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';

export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 60_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** The answer to a connection past the cap: a whole HTTP response, then the connection is closed. */
function tooMany(perAddress: number): string {
  const body = JSON.stringify({
    error: {
      code: 'unavailable',
      message: `This address holds ${perAddress} connections to the API already (AGENTQ_CONNECTIONS_PER_ADDRESS): close some, or reuse them (keep-alive).`,
    },
  });
  return `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 5\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** `perAddress`: 0 for no cap. */
export function createApiServer(options: { app: RequestListener; perAddress: number }): Server {
  const server = createServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    },
    options.app,
  );
  if (options.perAddress > 0) {
    const open = new Map<string, number>();
    const refusal = tooMany(options.perAddress);
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress ?? '';
      const count = (open.get(address) ?? 0) + 1;
      if (count > options.perAddress) {
        socket.end(refusal);
        socket.destroySoon();
        return;
      }
      open.set(address, count);
      socket.once('close', () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left > 0) open.set(address, left);
        else open.delete(address);
      });
    });
  }
  return server;
}

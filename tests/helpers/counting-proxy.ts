/**
 * A TCP proxy in front of a server (Redis) that counts the bytes the server sent through it: put between
 * a process and Redis, it says how much that process read from Redis while it did something.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface CountingProxy {
  /** Where to connect instead of the server: `host:port` on loopback. */
  host: string;
  port: number;
  /** The bytes the server sent to the proxy's clients so far. */
  fromServer(): number;
  close(): Promise<void>;
}

export async function startCountingProxy(target: { host: string; port: number }): Promise<CountingProxy> {
  let fromServer = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    upstream.on('data', (chunk: Buffer) => {
      fromServer += chunk.length;
      client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    fromServer: () => fromServer,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

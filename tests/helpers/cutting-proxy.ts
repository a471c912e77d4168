/**
 * A TCP proxy in front of the API that cuts chosen connections: the first `cuts` event streams are
 * closed (both sides, as a dropped network would) once `cutAfterBytes` of their answer went through.
 * It records each request's head, to see what a client sent when it came back.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface CuttingProxy {
  url: string;
  /** The head of every request that went through, in order. */
  heads: string[];
  close(): Promise<void>;
}

export async function startCuttingProxy(
  target: string,
  options: { cuts: number; cutAfterBytes: number },
): Promise<CuttingProxy> {
  const upstream = new URL(target);
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  let cuts = options.cuts;
  const server = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(server);
    let cutting = false;
    let sent = 0;
    client.on('data', (chunk: Buffer) => {
      // A new request (a kept-alive connection carries one after another) starts with its request line.
      const text = chunk.toString('latin1');
      if (/^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(text)) {
        const head = text.split('\r\n\r\n')[0]!;
        heads.push(head);
        if (/^GET \S+\/events/.test(head) && cuts > 0) {
          cuts--;
          cutting = true;
          sent = 0;
        }
      }
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      client.write(chunk);
      sent += chunk.length;
      if (cutting && sent >= options.cutAfterBytes) {
        client.destroy();
        server.destroy();
      }
    });
    const end = () => {
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    heads,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

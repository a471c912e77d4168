/**
 * A TCP proxy in front of Redis that lets a process's commands through until one matches, then passes
 * that one whole and holds every command after it, on every connection, forever: the process is left
 * exactly after that write, as if it had died there (a test then kills it). Commands are read as RESP
 * arrays, so the one that matched reaches Redis whole however TCP cut it.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface FreezingProxy {
  host: string;
  port: number;
  /** Resolves once the command that matched went through. */
  frozen: Promise<void>;
  close(): Promise<void>;
}

export async function startFreezingProxy(
  target: { host: string; port: number },
  /** Whether this command (its arguments, the name first) is the last to go through. */
  freezesAfter: (args: string[]) => boolean,
): Promise<FreezingProxy> {
  let frozen = false;
  let onFrozen: () => void = () => undefined;
  const frozenPromise = new Promise<void>((resolve) => (onFrozen = resolve));
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (frozen) return;
        const command = readCommand(pending);
        if (!command) return;
        upstream.write(pending.subarray(0, command.length));
        pending = pending.subarray(command.length);
        if (freezesAfter(command.args)) {
          frozen = true;
          onFrozen();
        }
      }
    });
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
    frozen: frozenPromise,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The first whole RESP array command in `buffer` (its arguments, and its length in bytes), if it holds one. */
function readCommand(buffer: Buffer): { args: string[]; length: number } | undefined {
  const line = (from: number) => {
    const end = buffer.indexOf('\r\n', from);
    return end === -1 ? undefined : { text: buffer.toString('latin1', from, end), next: end + 2 };
  };
  const head = line(0);
  if (!head) return undefined;
  if (!head.text.startsWith('*')) return { args: head.text.split(' '), length: head.next };
  const count = Number(head.text.slice(1));
  const args: string[] = [];
  let at = head.next;
  for (let index = 0; index < count; index++) {
    const size = line(at);
    if (!size) return undefined;
    const bytes = Number(size.text.slice(1));
    if (buffer.length < size.next + bytes + 2) return undefined;
    args.push(buffer.toString('utf8', size.next, size.next + bytes));
    at = size.next + bytes + 2;
  }
  return { args, length: at };
}

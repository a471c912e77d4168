/** A webhook receiver for tests: records every request, answers with the statuses it is given in turn. */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Requests that came in and have not been answered or dropped by the sender yet; the most there were at once. */
  open(): { now: number; most: number };
  /** Resolves once `count` requests came in (at once if they did already). */
  receivedCount(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

/**
 * `statuses`: the answer to each request in turn; the last one repeats (default 200). `holdsMs`: how long
 * each request in turn waits for its answer (none past the list's end). `hang`: no request is ever
 * answered (a receiver that is there but never answers: the sender's timeout ends each attempt).
 */
export async function startWebhookReceiver(
  statuses: number[] = [200],
  holdsMs: number[] = [],
  options: { hang?: boolean } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const open = { now: 0, most: 0 };
  const server = createServer((request, response) => {
    open.now += 1;
    open.most = Math.max(open.most, open.now);
    response.on('close', () => (open.now -= 1));
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      response.statusCode = statuses[Math.min(received.length - 1, statuses.length - 1)]!;
      if (!options.hang) setTimeout(() => response.end('ok'), holdsMs[received.length - 1] ?? 0);
      for (const waiter of waiters.filter((waiter) => received.length >= waiter.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    open: () => ({ ...open }),
    receivedCount(count, timeoutMs = 20_000) {
      if (received.length >= count) return Promise.resolve(received.slice(0, count));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${received.length} webhook requests came in within ${timeoutMs} ms, not ${count}`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(received.slice(0, count));
          },
        });
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, type TreeStreamedEvent } from './api-client.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

function event(seq: number, type: string): string {
  return `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, ts: 0, taskId: 't1', type, data: {} })}\n\n`;
}

describe("the CLI's event stream", () => {
  it('opens a dropped stream again from the last event seen (Last-Event-ID) and stops at the end', async () => {
    const asked: (string | undefined)[] = [];
    const server = http.createServer((request, response) => {
      const lastEventId = request.headers['last-event-id'] as string | undefined;
      asked.push(lastEventId);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      if (lastEventId === undefined) {
        // Two events, then the connection breaks mid-message.
        response.write(event(1, 'task.queued') + event(2, 'task.started') + 'id: 3\ndata: {"se', () =>
          response.socket?.destroy(),
        );
      } else {
        response.end(event(Number(lastEventId) + 1, 'task.completed'));
      }
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new ApiClient({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      reconnectMs: 10,
    });

    const seen: TreeStreamedEvent[] = [];
    for await (const streamed of client.events('t1')) seen.push(streamed);

    expect(seen.map((e) => ['seq' in e ? e.seq : undefined, e.type])).toEqual([
      [1, 'task.queued'],
      [2, 'task.started'],
      [3, 'task.completed'],
    ]);
    expect(asked).toEqual([undefined, '2']);
  });

  it('gives up with a clear error when the API keeps refusing connections', async () => {
    const server = http.createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await new Promise((resolve) => server.close(resolve));
    servers.pop();
    const client = new ApiClient({ url, reconnectMs: 1 });
    await expect(async () => {
      for await (const _ of client.events('t1')) void _;
    }).rejects.toThrow(/Lost the event stream of t1/);
  });
});

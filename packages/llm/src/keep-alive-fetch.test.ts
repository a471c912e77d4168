import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { keepAliveFetch } from './keep-alive-fetch.js';

describe('the keep-alive fetch', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('keeps every connection of a burst for the next one (Node keeps 256 by default)', async () => {
    let connections = 0;
    let waiting: Array<() => void> = [];
    const concurrency = 300;
    server = createServer((request, response) => {
      // Answers once the whole burst is in, so the burst needs as many connections as requests.
      waiting.push(() => response.end('{}'));
      if (waiting.length === concurrency) {
        for (const answer of waiting) answer();
        waiting = [];
      }
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const burst = () => Promise.all(Array.from({ length: concurrency }, async () => (await keepAliveFetch(url, { method: 'POST', body: '{}' })).json()));
    await burst();
    expect(connections).toBe(concurrency);
    await burst();
    expect(connections).toBe(concurrency);
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_LIMIT_BYTES, keepAliveFetch, nodeBodyOf, StreamedResponse, WholeResponse } from './keep-alive-fetch.js';

describe('the keep-alive fetch', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('keeps every connection of a burst for the next one (an http.Agent keeps 256 by default)', async () => {
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
    const burst = () =>
      Promise.all(
        Array.from({ length: concurrency }, async () =>
          (await keepAliveFetch(url, { method: 'POST', body: '{}' })).json(),
        ),
      );
    await burst();
    expect(connections).toBe(concurrency);
    await burst();
    expect(connections).toBe(concurrency);
  });
});

describe('the keep-alive fetch, against what a broken endpoint sends', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });
  const serve = async (handler: Parameters<typeof createServer>[1]) => {
    server = createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  };

  it('does not read an answer larger than any model sends: its body fails when read, saying why', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ANSWER_LIMIT_BYTES + 1) });
      response.write('{"a":');
    });
    const response = await keepAliveFetch(url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    await expect(response.json()).rejects.toThrow(/larger than 64 MiB/);
  });

  it('gives what arrived of a body cut off, then fails as fetch does', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      response.write('{"partial":', () => response.destroy());
    });
    const response = await keepAliveFetch(url, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toThrow(TypeError);
  });

  it('fails as fetch does when nothing answers, and with the abort when its signal fires', async () => {
    const closed = await serve(() => undefined);
    server!.close();
    server!.closeAllConnections();
    server = undefined;
    await expect(keepAliveFetch(closed, { method: 'POST', body: '{}' })).rejects.toThrow('fetch failed');
    const url = await serve(() => undefined);
    const controller = new AbortController();
    const pending = keepAliveFetch(url, { method: 'POST', body: '{}', signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('a body read whole', () => {
  const init = {
    status: 201,
    statusText: 'Created',
    headers: new Headers({ 'content-type': 'application/json', 'x-request-id': 'req_1' }),
  };
  // A leading BOM, and a character of several bytes.
  const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ answer: 'déjà vu ✓' }))]);

  it('is a Response with its status and headers, whose json and text read the bytes as fetch does', async () => {
    const response = new WholeResponse(bytes, init);
    expect(response).toBeInstanceOf(Response);
    expect([response.status, response.statusText, response.ok, response.headers.get('x-request-id')]).toEqual([
      201,
      'Created',
      true,
      'req_1',
    ]);
    expect(await response.json()).toEqual({ answer: 'déjà vu ✓' });
    expect(await new WholeResponse(bytes, init).text()).toBe(await new Response(bytes, init).text());
    expect(Buffer.from(await new WholeResponse(bytes, init).arrayBuffer())).toEqual(bytes);
  });

  it('is read once, as fetch allows', async () => {
    const response = new WholeResponse(bytes, init);
    expect(response.bodyUsed).toBe(false);
    await response.text();
    expect(response.bodyUsed).toBe(true);
    await expect(response.json()).rejects.toThrow(TypeError);
    await expect(response.arrayBuffer()).rejects.toThrow(TypeError);
    expect(() => response.clone()).toThrow(TypeError);
  });

  it('streams its body when asked for it, and is read through that stream from then on', async () => {
    const response = new WholeResponse(bytes, init);
    const clone = response.clone();
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body!) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(bytes);
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(TypeError);
    expect(await clone.json()).toEqual({ answer: 'déjà vu ✓' });
  });
});

describe('a streamed answer of the keep-alive fetch', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });
  const events = 'data: {"a":"déjà vu ✓"}\n\ndata: [DONE]\n\n';
  const streamedFrom = async () => {
    server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // In two writes, apart: it streams.
      response.write(events.slice(0, 9));
      setTimeout(() => response.end(events.slice(9)), 20);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return keepAliveFetch(url, { method: 'POST', body: '{"stream": true}' });
  };

  it('keeps its Node stream for the one reader that asks, once', async () => {
    const response = await streamedFrom();
    expect(response).toBeInstanceOf(StreamedResponse);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const stream = nodeBodyOf(response)!;
    expect(nodeBodyOf(response)).toBeUndefined();
    expect(response.bodyUsed).toBe(true);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe(events);
    await expect(response.text()).rejects.toThrow(TypeError);
  });

  it('is read as a fetch response is by anything else, which then has its stream', async () => {
    expect(await (await streamedFrom()).text()).toBe(events);
    const response = await streamedFrom();
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body!) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString()).toBe(events);
    expect(response.bodyUsed).toBe(true);
    expect(nodeBodyOf(response)).toBeUndefined();
    expect(nodeBodyOf(new Response(events))).toBeUndefined();
  });
});

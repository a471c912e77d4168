/** web_search asks a SearxNG instance where it is served, at its root or under a path of its own. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createWebSearchTool } from './web-search-tool.js';
import type { ToolContext } from './tool.js';

const context: ToolContext = {
  workdir: '/nonexistent',
  signal: new AbortController().signal,
  timeoutMs: 5_000,
  outputLimit: 2_000,
  isolation: { kind: 'none' },
};
const asked: string[] = [];
const server = createServer((request, response) => {
  asked.push(request.url ?? '');
  const url = new URL(request.url ?? '/', 'http://x');
  if (!['/search', '/searx/search'].includes(url.pathname)) return void response.writeHead(404).end();
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      results: [{ title: `found ${url.searchParams.get('q')}`, url: 'https://example.org/', content: 'a snippet' }],
    }),
  );
});
let base: string;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.close();
});

it('searches at the instance root, or under its path with or without a final slash', async () => {
  for (const searchUrl of [base, `${base}/`, `${base}/searx`, `${base}/searx/`]) {
    const result = await createWebSearchTool({ searchUrl }).run({ query: 'bees & wasps' }, context);
    expect(result, searchUrl).toEqual({
      ok: true,
      output: '1. found bees & wasps\n   https://example.org/\n   a snippet',
    });
  }
  expect(asked.map((url) => url.split('?')[0])).toEqual(['/search', '/search', '/searx/search', '/searx/search']);
});

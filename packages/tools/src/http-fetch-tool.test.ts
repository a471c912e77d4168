/**
 * `http_fetch` reaches the public web and nothing else: checked where it connects, by number, by name
 * (resolved once, so a name cannot answer one address to a check and another to the connection), and
 * at every redirect.
 */
import dns from 'node:dns';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withPublicServer } from '../../../tests/helpers/public-network.js';
import { blockedDestinations } from './blocked-destinations.js';
import { httpFetchTool } from './http-fetch-tool.js';
import type { ToolContext } from './tool.js';

const context: ToolContext = {
  workdir: '/nonexistent',
  signal: new AbortController().signal,
  timeoutMs: 10_000,
  outputLimit: 2_000,
  isolation: { kind: 'none' },
};
const REFUSED = /^Refused: .* is a private or local address \(.+\); http_fetch only reaches the public web\.$/;

/** Names of the test's own, answered as given; every other name by the system's resolver. */
function resolveNames(names: Record<string, string>): void {
  const real = dns.lookup;
  vi.spyOn(dns, 'lookup').mockImplementation(((
    host: string,
    options: dns.LookupOptions | ((...args: unknown[]) => void),
    callback?: (...args: unknown[]) => void,
  ) => {
    const done = (typeof options === 'function' ? options : callback)!;
    const all = typeof options === 'object' && options.all;
    const address = names[host];
    if (address === undefined) return (real as (...args: unknown[]) => void)(host, options, callback);
    const family = address.includes(':') ? 6 : 4;
    if (all) done(null, [{ address, family }]);
    else done(null, address, family);
  }) as typeof dns.lookup);
}

/** A server on this host that records every request it gets. */
async function localServer(host: string) {
  const requests: string[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    requests.push(request.url ?? '');
    if (request.url === '/slow') return void setTimeout(() => response.end('late'), 5_000);
    if (request.url === '/redirect') return void response.writeHead(302, { location: '/' }).end();
    response.writeHead(request.url === '/missing' ? 404 : 200, { 'content-type': 'text/plain' });
    response.end(request.url === '/big' ? 'y'.repeat(10_000) : 'hello from the server');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { port: (server.address() as AddressInfo).port, requests, close };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('http_fetch', () => {
  it('gets a page with its status, caps the body, follows redirects and times out', async () => {
    const server = await localServer('127.0.0.1');
    const base = `http://127.0.0.1:${server.port}`;
    const local = { ...context, allowPrivateNetwork: true };
    try {
      expect(await httpFetchTool.run({ url: `${base}/` }, local)).toEqual({
        ok: true,
        output: 'HTTP 200 OK (text/plain)\n\nhello from the server',
      });
      expect(await httpFetchTool.run({ url: `${base}/missing` }, local)).toMatchObject({
        ok: false,
        output: expect.stringMatching(/^HTTP 404 Not Found/),
      });
      expect((await httpFetchTool.run({ url: `${base}/big` }, local)).output).toMatch(/characters omitted/);
      expect(await httpFetchTool.run({ url: `${base}/slow` }, { ...local, timeoutMs: 200 })).toEqual({
        ok: false,
        output: `Could not fetch ${base}/slow: timed out after 200 ms`,
      });
      expect(await httpFetchTool.run({ url: `${base}/redirect` }, local)).toEqual({
        ok: true,
        output: 'HTTP 200 OK (text/plain)\n\nhello from the server',
      });
      // A redirect the approval rules hold is not followed: the model is told where it went, and how to ask.
      const held = await httpFetchTool.run(
        { url: `${base}/redirect` },
        { ...local, redirectNeedsApproval: (url) => (url === `${base}/` ? 'http_fetch to elsewhere' : undefined) },
      );
      expect(held).toEqual({
        ok: false,
        output: `Not followed: ${base}/redirect redirected to ${base}/, and a call to that URL needs a person's approval (http_fetch to elsewhere). To ask for it, call http_fetch with that URL.`,
      });
      expect(server.requests.filter((url) => url === '/')).toHaveLength(2);
      // By default the model cannot reach this machine or its private network, by name or number.
      for (const url of [
        `${base}/`,
        `http://localhost:${server.port}/`,
        'http://10.1.2.3/',
        'http://[::1]/',
        'http://169.254.169.254/latest/meta-data/',
      ]) {
        expect((await httpFetchTool.run({ url }, context)).output).toMatch(REFUSED);
      }
      expect((await httpFetchTool.run({ url: 'file:///etc/passwd' }, context)).output).toMatch(
        /Only http:\/\/ and https:\/\/ URLs/,
      );
    } finally {
      server.close();
    }
  });

  it('refuses a name that resolves to this machine where it connects, whatever an earlier look found (DNS rebinding)', async () => {
    const local = await localServer('127.0.0.1');
    // The system's resolver knows nothing of this name: a check that looked it up before connecting
    // found no address to refuse, and the connection's own lookup then went to loopback.
    resolveNames({ 'rebind.agentq.test': '127.0.0.1', 'mapped.agentq.test': '::ffff:127.0.0.1' });
    try {
      for (const host of ['rebind.agentq.test', 'mapped.agentq.test']) {
        expect((await httpFetchTool.run({ url: `http://${host}:${local.port}/secret` }, context)).output).toBe(
          `Refused: ${host} is a private or local address (${host.startsWith('mapped') ? '::ffff:127.0.0.1' : '127.0.0.1'}); http_fetch only reaches the public web.`,
        );
      }
      expect(local.requests).toEqual([]);
    } finally {
      local.close();
    }
  });

  it('refuses every form of an address that is not on the internet', async () => {
    const local = await localServer('127.0.0.1');
    try {
      const urls = [
        `http://[::ffff:127.0.0.1]:${local.port}/`, // IPv4 in IPv6 form
        'http://2130706433/', // 127.0.0.1 as one number
        'http://224.0.0.1/', // multicast
        'http://255.255.255.255/', // broadcast
        'http://198.18.0.1/', // benchmarking
        'http://[ff02::1]/', // IPv6 multicast
        'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', // 169.254.169.254 through a NAT64 gateway
        'http://[64:ff9b::a00:1]/', // 10.0.0.1 the same way
      ];
      for (const url of urls) expect((await httpFetchTool.run({ url }, context)).output, url).toMatch(REFUSED);
      expect(local.requests).toEqual([]);
    } finally {
      local.close();
    }
  });

  it('the refused list: private, reserved, NAT64 forms, this host, and the services named', () => {
    const blocked = blockedDestinations(['203.0.113.9']);
    for (const address of [
      '127.0.0.1',
      '::1',
      '::ffff:10.1.2.3',
      '169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '240.0.0.1',
      '203.0.113.9',
    ])
      expect(blocked(address), address).toBe(true);
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '64:ff9b::5db8:d822', '203.0.113.10'])
      expect(blocked(address), address).toBe(false);
  });

  const asRoot = process.getuid?.() === 0;

  it.skipIf(!asRoot)(
    'reaches a public server by number and by name, and never this host by its public address or a service agentq uses',
    async () => {
      await withPublicServer('203.0.113', async (address, port) => {
        // Something of this host's listening on every address, reached at the host's side of the veth.
        const host = await localServer('0.0.0.0');
        resolveNames({ 'public.agentq.test': address, 'me.agentq.test': '203.0.113.1' });
        try {
          const fromTheInternet = { ok: true, output: 'HTTP 200 OK (text/plain)\n\nfrom the internet\n' };
          expect(await httpFetchTool.run({ url: `http://${address}:${port}/` }, context)).toEqual(fromTheInternet);
          expect(await httpFetchTool.run({ url: `http://public.agentq.test:${port}/` }, context)).toEqual(
            fromTheInternet,
          );
          for (const url of [`http://203.0.113.1:${host.port}/`, `http://me.agentq.test:${host.port}/`]) {
            expect((await httpFetchTool.run({ url }, context)).output, url).toMatch(REFUSED);
          }
          // A public page that redirects to this machine, by number or by name.
          for (const target of [`http://127.0.0.1:${host.port}/secret`, `http://localhost:${host.port}/secret`]) {
            expect(
              (await httpFetchTool.run({ url: `http://${address}:${port}/to/${target}` }, context)).output,
              target,
            ).toMatch(REFUSED);
          }
          expect(host.requests).toEqual([]);
          // Redis at a public address (the worker passes its addresses): refused like this host.
          expect(
            (
              await httpFetchTool.run(
                { url: `http://public.agentq.test:${port}/` },
                { ...context, serviceAddresses: [address] },
              )
            ).output,
          ).toMatch(REFUSED);
        } finally {
          host.close();
        }
      });
    },
  );
});

import { isIP } from 'node:net';
import { Agent, fetch, type Response } from 'undici';
import { z } from 'zod';
import {
  BlockedDestinationError,
  blockedDestinations,
  checkedLookup,
  type DestinationCheck,
} from './blocked-destinations.js';
import { capOutput } from './cap-output.js';
import { defineTool } from './tool.js';

/** Bytes read from a response at most; the rest is cut off. */
const MAX_BYTES = 2_000_000;
const MAX_REDIRECTS = 5;

export const httpFetchTool = defineTool({
  name: 'http_fetch',
  description: 'Fetch a URL with HTTP GET and get the status and the body as text (large bodies are cut).',
  schema: z.object({ url: z.string().url().describe('An http:// or https:// URL') }),
  async run(args, context) {
    const signal = AbortSignal.any([context.signal, AbortSignal.timeout(context.timeoutMs)]);
    // Checked where the connection is made: a name is resolved once, and its addresses are the ones checked.
    const blocked = context.allowPrivateNetwork ? undefined : blockedDestinations(context.serviceAddresses);
    const agent = new Agent(blocked ? { connect: { lookup: checkedLookup(blocked) } } : {});
    try {
      let url = new URL(args.url);
      let response: Response | undefined;
      // Redirects are followed by hand, so that every hop is checked the same way.
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        const refusal = refuse(url, blocked);
        if (refusal) return { ok: false, output: refusal };
        try {
          response = await fetch(url, {
            dispatcher: agent,
            signal,
            redirect: 'manual',
            headers: { 'user-agent': 'agentq-http-fetch' },
          });
        } catch (error) {
          const cause = (error as Error).cause;
          if (cause instanceof BlockedDestinationError)
            return { ok: false, output: refusedMessage(url.hostname, cause.address) };
          const reason = context.signal.aborted
            ? 'cancelled'
            : signal.aborted
              ? `timed out after ${context.timeoutMs} ms`
              : (error as Error).message;
          return { ok: false, output: `Could not fetch ${url.href}: ${reason}` };
        }
        const location = response.headers.get('location');
        if (response.status < 300 || response.status >= 400 || !location) break;
        await response.body?.cancel();
        const next = new URL(location, url);
        // Each hop passes the approval rules as a call to it would: the host left may not choose where to go.
        const rule = context.redirectNeedsApproval?.(next.href);
        if (rule) {
          return {
            ok: false,
            output: `Not followed: ${url.href} redirected to ${next.href}, and a call to that URL needs a person's approval (${rule}). To ask for it, call http_fetch with that URL.`,
          };
        }
        url = next;
        response = undefined;
      }
      if (!response) return { ok: false, output: `Gave up after ${MAX_REDIRECTS} redirects, at ${url.href}.` };
      const { text, truncated } = await readCapped(response, MAX_BYTES);
      const header = `HTTP ${response.status} ${response.statusText} (${response.headers.get('content-type') ?? 'no content type'})`;
      const body = capOutput(text, context.outputLimit) + (truncated ? `\n[body cut after ${MAX_BYTES} bytes]` : '');
      return { ok: response.ok, output: `${header}\n\n${body}` };
    } finally {
      await agent.destroy();
    }
  },
});

/** A URL's scheme, and an address written in it (a name is checked when it is resolved, at connect). */
function refuse(url: URL, blocked: DestinationCheck | undefined): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `Only http:// and https:// URLs can be fetched, not ${url.protocol}`;
  const address = url.hostname.replace(/^\[|\]$/g, '');
  return blocked && isIP(address) && blocked(address) ? refusedMessage(url.hostname, address) : undefined;
}

const refusedMessage = (host: string, address: string) =>
  `Refused: ${host} is a private or local address (${address}); http_fetch only reaches the public web.`;

async function readCapped(response: Response, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= maxBytes) {
      truncated = true;
      await reader.cancel();
      break;
    }
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks).subarray(0, maxBytes)), truncated };
}

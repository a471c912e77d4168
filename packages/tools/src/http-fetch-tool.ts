import { z } from 'zod';
import { capOutput } from './cap-output.js';
import { privateAddressOf } from './private-address.js';
import { defineTool, type ToolContext } from './tool.js';

/** Bytes read from a response at most; the rest is cut off. */
const MAX_BYTES = 2_000_000;
const MAX_REDIRECTS = 5;

export const httpFetchTool = defineTool({
  name: 'http_fetch',
  description: 'Fetch a URL with HTTP GET and get the status and the body as text (large bodies are cut).',
  schema: z.object({ url: z.string().url().describe('An http:// or https:// URL') }),
  async run(args, context) {
    const signal = AbortSignal.any([context.signal, AbortSignal.timeout(context.timeoutMs)]);
    let url = new URL(args.url);
    let response: Response | undefined;
    // Redirects are followed by hand, so that every hop is checked the same way.
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const refusal = await refuse(url, context);
      if (refusal) return { ok: false, output: refusal };
      try {
        response = await fetch(url, { signal, redirect: 'manual', headers: { 'user-agent': 'agentq-http-fetch' } });
      } catch (error) {
        const reason = context.signal.aborted ? 'cancelled' : signal.aborted ? `timed out after ${context.timeoutMs} ms` : (error as Error).message;
        return { ok: false, output: `Could not fetch ${url.href}: ${reason}` };
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) break;
      await response.body?.cancel();
      url = new URL(location, url);
      response = undefined;
    }
    if (!response) return { ok: false, output: `Gave up after ${MAX_REDIRECTS} redirects, at ${url.href}.` };
    const { text, truncated } = await readCapped(response, MAX_BYTES);
    const header = `HTTP ${response.status} ${response.statusText} (${response.headers.get('content-type') ?? 'no content type'})`;
    const body = capOutput(text, context.outputLimit) + (truncated ? `\n[body cut after ${MAX_BYTES} bytes]` : '');
    return { ok: response.ok, output: `${header}\n\n${body}` };
  },
});

async function refuse(url: URL, context: ToolContext): Promise<string | undefined> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `Only http:// and https:// URLs can be fetched, not ${url.protocol}`;
  if (context.allowPrivateNetwork) return undefined;
  const inside = await privateAddressOf(url.hostname).catch(() => undefined);
  return inside ? `Refused: ${url.hostname} is a private or local address (${inside}); http_fetch only reaches the public web.` : undefined;
}

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

import { z } from 'zod';
import { capOutput } from './cap-output.js';
import { defineTool } from './tool.js';

/** Bytes read from a response at most; the rest is cut off. */
const MAX_BYTES = 2_000_000;

export const httpFetchTool = defineTool({
  name: 'http_fetch',
  description: 'Fetch a URL with HTTP GET and get the status and the body as text (large bodies are cut).',
  schema: z.object({ url: z.string().url().describe('An http:// or https:// URL') }),
  async run(args, context) {
    const url = new URL(args.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return { ok: false, output: `Only http:// and https:// URLs can be fetched, not ${url.protocol}` };
    }
    const signal = AbortSignal.any([context.signal, AbortSignal.timeout(context.timeoutMs)]);
    let response: Response;
    try {
      response = await fetch(url, { signal, redirect: 'follow', headers: { 'user-agent': 'agentq-http-fetch' } });
    } catch (error) {
      const reason = context.signal.aborted ? 'cancelled' : signal.aborted ? `timed out after ${context.timeoutMs} ms` : (error as Error).message;
      return { ok: false, output: `Could not fetch ${url.href}: ${reason}` };
    }
    const { text, truncated } = await readCapped(response, MAX_BYTES);
    const header = `HTTP ${response.status} ${response.statusText} (${response.headers.get('content-type') ?? 'no content type'})`;
    const body = capOutput(text, context.outputLimit) + (truncated ? `\n[body cut after ${MAX_BYTES} bytes]` : '');
    return { ok: response.ok, output: `${header}\n\n${body}` };
  },
});

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

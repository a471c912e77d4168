/**
 * The `fetch` the openai SDK is given: Node's own http(s) client with a keep-alive agent, instead of
 * the global fetch (undici), which costs several times more CPU per request. A worker making
 * thousands of model calls a second spends that CPU on nothing else; the connections are reused.
 *
 * It does what the SDK needs of `fetch`: a string or byte body, headers, an abort signal (rejecting
 * with an `AbortError`, as fetch does), and a `Response` whose body streams as it arrives. Anything
 * else (a form body) goes to the global fetch.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { loopTurn } from './loop-turn.js';

// Every free connection is kept (Node's default keeps 256): a worker running 2,000 loops would
// otherwise close and reopen most of its connections on every call. Idle ones close after a minute.
const AGENT_OPTIONS = { keepAlive: true, scheduling: 'lifo', maxFreeSockets: Infinity, timeout: 60_000 } as const;
const agents = { 'http:': new http.Agent(AGENT_OPTIONS), 'https:': new https.Agent(AGENT_OPTIONS) };

/**
 * The largest answer read: a model's answer is kilobytes (a few hundred KB at the largest token limits),
 * and an endpoint that sends more (a broken proxy, a server that does not stop) must not take the worker
 * and every task it runs with it. Past it the answer fails as a broken one.
 */
export const ANSWER_LIMIT_BYTES = 64 * 1024 * 1024;

/** Statuses whose response has no body (a `Response` refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export async function keepAliveFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const body = init.body;
  const client = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
  if (input instanceof Request || !client || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array))) return fetch(input, init);
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const streamed = typeof body === 'string' && /"stream"\s*:\s*true/.test(body);
  return new Promise<Response>((resolve, reject) => {
    const request = client.request(url, { method: init.method ?? 'GET', headers: headersOf(init.headers), agent: agents[url.protocol as 'http:' | 'https:'] }, (response) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (Array.isArray(value)) for (const each of value) headers.append(name, each);
        else if (value !== undefined) headers.set(name, value);
      }
      const status = response.statusCode ?? 500;
      const answer = (body: ConstructorParameters<typeof Response>[0]) => new Response(body, { status, statusText: response.statusMessage ?? '', headers });
      if (NO_BODY.has(status) || init.method === 'HEAD') {
        response.resume();
        return resolve(answer(null));
      }
      // A streamed completion streams; any other body is read whole first (a web stream around
      // Node's costs more than the read). A body cut off fails as fetch's would: when it is read.
      if (streamed) return resolve(answer(Readable.toWeb(response) as ReadableStream<Uint8Array>));
      const chunks: Buffer[] = [];
      let received = 0;
      const tooLarge = () => {
        // Said first: the connection's end, which follows, must not be taken for the reason.
        resolve(answer(brokenBody(Buffer.alloc(0), `the answer is larger than ${ANSWER_LIMIT_BYTES / 1024 / 1024} MiB, more than any model's answer; it was not read`)));
        chunks.length = 0;
        response.destroy();
      };
      if (Number(response.headers['content-length']) > ANSWER_LIMIT_BYTES) return tooLarge();
      response.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > ANSWER_LIMIT_BYTES) tooLarge();
        else chunks.push(chunk);
      });
      // Answers come in bursts: each is handled in its turn (loop-turn.ts), not all in one poll.
      response.once('end', () => void loopTurn().then(() => resolve(wholeResponse(Buffer.concat(chunks), { status, statusText: response.statusMessage ?? '', headers }))));
      response.once('error', () => resolve(answer(brokenBody(Buffer.concat(chunks)))));
      response.once('aborted', () => resolve(answer(brokenBody(Buffer.concat(chunks)))));
    });
    const abort = () => request.destroy(abortError(signal));
    signal?.addEventListener('abort', abort, { once: true });
    request.once('close', () => signal?.removeEventListener('abort', abort));
    request.once('error', (error) => reject(signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: error })));
    request.end(body ?? undefined);
  });
}

const utf8 = new TextDecoder();

/**
 * A `Response` for a body read whole. Given the bytes, a `Response` wraps them in a web stream that
 * its `json()` then reads back: 30 to 60 µs a model call here, measured, against under 10 this way.
 * So `text()`, `json()` and `arrayBuffer()` read the bytes at hand (decoded as fetch does: UTF-8, a
 * leading BOM dropped), once, as fetch allows. What needs the stream (`body`, which the SDK cancels
 * before a retry; `blob()`, `formData()`, `clone()`) gets a `Response` made with the bytes, and from
 * then on every read is that one's.
 */
export function wholeResponse(bytes: Buffer, init: ResponseInit): Response {
  const response = new Response(null, init);
  let full: Response | undefined;
  let used = false;
  const withBody = () => {
    if (!full) {
      full = new Response(bytes, init);
      // Read already: its stream is too.
      if (used) void full.arrayBuffer();
    }
    return full;
  };
  const take = async () => {
    if (used) throw new TypeError('Body is unusable: Body has already been read');
    used = true;
    return bytes;
  };
  Object.defineProperties(response, {
    body: { get: () => withBody().body },
    bodyUsed: { get: () => used || (full?.bodyUsed ?? false) },
    text: { value: async () => (full ? full.text() : utf8.decode(await take())) },
    json: { value: async () => (full ? full.json() : (JSON.parse(utf8.decode(await take())) as unknown)) },
    arrayBuffer: { value: async () => (full ? full.arrayBuffer() : new Uint8Array(await take()).buffer) },
    blob: { value: () => withBody().blob() },
    formData: { value: () => withBody().formData() },
    clone: { value: () => withBody().clone() },
  });
  return response;
}

/** A body that gives what arrived, then fails, as a connection cut mid-body does. */
function brokenBody(received: Buffer, why = 'terminated: the connection closed before the body ended'): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      if (received.length) controller.enqueue(new Uint8Array(received));
      controller.error(new TypeError(why));
    },
  });
}

function headersOf(headers: RequestInit['headers']): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers) {
    const plain: Record<string, string> = {};
    headers.forEach((value, name) => (plain[name] = value));
    return plain;
  }
  if (Array.isArray(headers)) return Object.fromEntries(headers);
  return headers as Record<string, string>;
}

/** What fetch rejects with when its signal aborts: the signal's reason, or an `AbortError`. */
function abortError(signal: AbortSignal | undefined): Error {
  return signal?.reason instanceof Error && signal.reason.name === 'AbortError' ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The `fetch` the openai SDK is given: undici's `request` (the client under Node's own fetch, without
 * fetch's web streams) over a keep-alive pool. Per request it costs half the CPU of Node's http client,
 * and a fraction of the global fetch's: a worker making thousands of model calls a second spends that
 * CPU on nothing else. The connections are reused, as many as the calls under way need.
 *
 * It does what the SDK needs of `fetch`: a string or byte body, headers, an abort signal (rejecting
 * with an `AbortError`, as fetch does), and a `Response` whose body streams as it arrives (a streamed
 * completion's keeps undici's Node stream, which the model's client reads: `StreamedResponse`).
 * Anything else (a form body) goes to the global fetch.
 */
import { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { loopTurn } from './loop-turn.js';

// No limit on connections per endpoint (a worker running 2,000 loops keeps 2,000 open); an idle one
// closes when the server's Keep-Alive says, else after undici's default of a few seconds. No timeouts
// of undici's own (5 minutes for headers, and between chunks): the SDK's per request
// (AGENTQ_LLM_TIMEOUT_MS) and the call's deadline bound a call, and a slow local model may need longer.
const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

/**
 * The largest answer read: a model's answer is kilobytes (a few hundred KB at the largest token limits),
 * and an endpoint that sends more (a broken proxy, a server that does not stop) must not take the worker
 * and every task it runs with it. Past it the answer fails as a broken one.
 */
export const ANSWER_LIMIT_BYTES = 64 * 1024 * 1024;

/** Statuses whose response has no body (a `Response` refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export async function keepAliveFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = input instanceof Request ? undefined : typeof input === 'string' ? input : input.href;
  const body = init.body;
  if (!url || !/^https?:/i.test(url) || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)))
    return fetch(input, init);
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const method = (init.method ?? 'GET').toUpperCase();
  let response: Dispatcher.ResponseData;
  try {
    // (Credentials in the URL are not sent: the SDK's own Authorization header always comes first.)
    const { origin, pathname, search } = new URL(url);
    response = await dispatcher.request({
      origin,
      path: `${pathname}${search}`,
      method: method as 'GET',
      headers: headersOf(init.headers),
      body: body ?? null,
      signal,
    });
  } catch (error) {
    throw signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: error });
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (Array.isArray(value)) for (const each of value) headers.append(name, each);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = response.statusCode;
  const stream = response.body;
  if (NO_BODY.has(status) || method === 'HEAD') {
    await stream.dump();
    return new Response(null, { status, headers });
  }
  // A streamed completion streams; any other body is read whole first (a web stream around
  // Node's costs more than the read), a stream request answered whole (JSON) too, with the same bounds.
  // A body cut off fails as fetch's would: when it is read.
  if (
    typeof body === 'string' &&
    /"stream"\s*:\s*true/.test(body) &&
    String(response.headers['content-type'] ?? '').includes('text/event-stream')
  )
    return new StreamedResponse(stream, { status, headers });
  const tooLarge = `the answer is larger than ${ANSWER_LIMIT_BYTES / 1024 / 1024} MiB, more than any model's answer; it was not read`;
  if (Number(response.headers['content-length']) > ANSWER_LIMIT_BYTES) {
    // Destroyed, undici's body says the request was aborted: nobody reads that any more.
    stream.on('error', () => undefined).destroy();
    return new Response(brokenBody(Buffer.alloc(0), tooLarge), { status, headers });
  }
  const read = await new Promise<Buffer | Response>((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received <= ANSWER_LIMIT_BYTES) return void chunks.push(chunk);
      stream.destroy();
      resolve(new Response(brokenBody(Buffer.alloc(0), tooLarge), { status, headers }));
    });
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', () => resolve(new Response(brokenBody(Buffer.concat(chunks)), { status, headers })));
  });
  if (signal?.aborted) throw abortError(signal);
  if (read instanceof Response) return read;
  // Answers come in bursts: each is handled in its turn (loop-turn.ts), not all in one poll.
  await loopTurn();
  return new WholeResponse(read, { status, headers });
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
export class WholeResponse extends Response {
  /** The `Response` made with the bytes, once something needed its stream. */
  full: Response | undefined;
  used = false;

  constructor(
    readonly received: Buffer,
    readonly init: ResponseInit,
  ) {
    super(null, init);
  }
}

function take(response: WholeResponse): Buffer {
  if (response.used) throw new TypeError('Body is unusable: Body has already been read');
  response.used = true;
  return response.received;
}

function withBody(response: WholeResponse): Response {
  if (!response.full) {
    response.full = new Response(new Uint8Array(response.received), response.init);
    // Read already: its stream is too.
    if (response.used) void response.full.arrayBuffer();
  }
  return response.full;
}

// Response's types declare its readers as properties, so they are overridden on the prototype, once
// (made per response, as own properties, they cost more than the stream they save).
Object.defineProperties(WholeResponse.prototype, {
  body: {
    get: function (this: WholeResponse) {
      return withBody(this).body;
    },
  },
  bodyUsed: {
    get: function (this: WholeResponse) {
      return this.used || (this.full?.bodyUsed ?? false);
    },
  },
  text: {
    value: async function (this: WholeResponse) {
      return this.full ? this.full.text() : utf8.decode(take(this));
    },
  },
  json: {
    value: async function (this: WholeResponse) {
      return this.full ? this.full.json() : (JSON.parse(utf8.decode(take(this))) as unknown);
    },
  },
  arrayBuffer: {
    value: async function (this: WholeResponse) {
      return this.full ? this.full.arrayBuffer() : new Uint8Array(take(this)).buffer;
    },
  },
  blob: {
    value: function (this: WholeResponse) {
      return withBody(this).blob();
    },
  },
  formData: {
    value: function (this: WholeResponse) {
      return withBody(this).formData();
    },
  },
  clone: {
    value: function (this: WholeResponse) {
      return withBody(this).clone();
    },
  },
});

/**
 * A `Response` whose body streams as it arrives, kept as the Node stream undici gives: the model's
 * client reads a streamed completion from it (`nodeBodyOf`, completion-chunks.ts), where a web stream
 * around it, and the SDK's reading of that, cost a worker about 70 µs a call. What else reads it
 * (`body`, `text()`, ...) gets the `Response` a fetch would answer, made from the stream then.
 */
export class StreamedResponse extends Response {
  /** The `Response` made with the stream, once something needed it. */
  full: Response | undefined;
  taken = false;

  constructor(
    readonly stream: Readable,
    readonly init: ResponseInit,
  ) {
    super(null, init);
  }
}

/** The Node stream of a streamed answer's body, once, if nothing read the body yet; else undefined. */
export function nodeBodyOf(response: Response): Readable | undefined {
  if (!(response instanceof StreamedResponse) || response.taken || response.full) return undefined;
  response.taken = true;
  return response.stream;
}

function streamedFull(response: StreamedResponse): Response {
  if (response.taken) throw new TypeError('Body is unusable: Body has already been read');
  response.full ??= new Response(Readable.toWeb(response.stream) as ReadableStream<Uint8Array>, response.init);
  return response.full;
}

Object.defineProperties(StreamedResponse.prototype, {
  body: {
    get: function (this: StreamedResponse) {
      return streamedFull(this).body;
    },
  },
  bodyUsed: {
    get: function (this: StreamedResponse) {
      return this.taken || (this.full?.bodyUsed ?? false);
    },
  },
  // (as fetch's: a read of a used body rejects; a clone of one throws)
  ...Object.fromEntries(
    (['text', 'json', 'arrayBuffer', 'blob', 'formData'] as const).map((name) => [
      name,
      {
        value: async function (this: StreamedResponse) {
          return (streamedFull(this)[name] as () => Promise<unknown>).call(this.full);
        },
      },
    ]),
  ),
  clone: {
    value: function (this: StreamedResponse) {
      return streamedFull(this).clone();
    },
  },
});

/** A body that gives what arrived, then fails, as a connection cut mid-body does. */
function brokenBody(
  received: Buffer,
  why = 'terminated: the connection closed before the body ended',
): ReadableStream<Uint8Array> {
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
  return signal?.reason instanceof Error && signal.reason.name === 'AbortError'
    ? signal.reason
    : new DOMException('This operation was aborted', 'AbortError');
}

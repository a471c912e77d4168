/**
 * A test double of the OpenAI chat completions API, spoken over real HTTP so that the real
 * `openai` SDK path is exercised. It answers `POST /v1/chat/completions` (plain and streamed,
 * tool calls, usage, error statuses with bodies and Retry-After) from a script of rules chosen by
 * matching the request, and records every request it got.
 *
 * @example
 * const double = await startOpenAIDouble({ rules: [{ reply: { content: 'hi' } }] });
 * // OPENAI_BASE_URL=double.baseURL
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** The JSON body of a chat completions request, as the double received it. */
export interface DoubleRequest {
  model: string;
  messages: Array<{ role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface DoubleToolCall {
  name: string;
  /** An object is sent as JSON; a string is sent as is (to script malformed JSON). */
  arguments: string | Record<string, unknown>;
  id?: string;
}

export interface DoubleAnswer {
  content?: string | null;
  toolCalls?: DoubleToolCall[];
  /** Sent as `reasoning_content`, as DeepSeek does. */
  reasoning?: string;
  usage?: { promptTokens: number; completionTokens: number; cachedPromptTokens?: number };
  /** Wait this long before answering (to script slow models and cancellation). */
  delayMs?: number;
  /** Streamed: wait this long between chunks (an answer that forms over time). */
  chunkDelayMs?: number;
  /** More response headers, e.g. a provider's `x-ratelimit-*`. */
  headers?: Record<string, string>;
}

export interface DoubleError {
  status: number;
  message: string;
  type?: string;
  /** The body's `error.code`, e.g. OpenAI's `insufficient_quota` on a 429. Default null. */
  code?: string;
  headers?: Record<string, string>;
}

/**
 * A reply that breaks the wire instead of answering: a body cut off mid-way (`truncated`), a 200 that
 * is not JSON (`not-json`), a completion with no choices (`no-choices`), a stream that stops before
 * `[DONE]` (`no-done`, a truncated body when not streamed), no answer at all until the client gives
 * up (`hang`), or a body that does not stop (`oversized`: 80 MiB, without a length, until the client goes).
 */
export type DoubleFault = 'truncated' | 'not-json' | 'no-choices' | 'no-done' | 'hang' | 'oversized';

/**
 * A 200 whose JSON body is exactly this, for a server that follows the wire format only roughly (a
 * field missing, of another type, content as parts).
 */
export interface DoubleBody {
  body: unknown;
}

export type DoubleReply = DoubleAnswer | { error: DoubleError } | { fault: DoubleFault } | DoubleBody;

export interface DoubleRule {
  /** Which requests this rule answers. Default: every request. */
  match?: (request: DoubleRequest) => boolean;
  /** The answer, or a function of the request that makes it (a promise: the answer waits for it). */
  reply: DoubleReply | ((request: DoubleRequest) => DoubleReply | Promise<DoubleReply>);
  /** How many requests this rule answers before it is used up. Default: no limit. */
  times?: number;
}

export interface OpenAIDouble {
  /** Pass as `OPENAI_BASE_URL`: it ends in `/v1`. */
  baseURL: string;
  /** Every request received, in order. */
  requests: DoubleRequest[];
  /** When each request arrived (ms since the epoch), by index in `requests`. */
  receivedAt: number[];
  /** Streamed answers: when each sent its first piece of text (ms since the epoch), in order. */
  firstTokenAt: number[];
  /** Rules are tried in order; the first that matches and is not used up answers. */
  setRules(rules: DoubleRule[]): void;
  close(): Promise<void>;
}

export interface StartOpenAIDoubleOptions {
  rules?: DoubleRule[];
  /** Default 0: a free port. */
  port?: number;
  host?: string;
}

export async function startOpenAIDouble(options: StartOpenAIDoubleOptions = {}): Promise<OpenAIDouble> {
  let rules: Array<DoubleRule & { used: number }> = [];
  const setRules = (next: DoubleRule[]) => {
    rules = next.map((rule) => ({ ...rule, used: 0 }));
  };
  setRules(options.rules ?? []);
  const requests: DoubleRequest[] = [];
  const receivedAt: number[] = [];
  const firstTokenAt: number[] = [];
  let nextId = 1;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => sendError(res, { status: 500, message: String(error) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({ object: 'list', data: [{ id: 'double', object: 'model', created: 0, owned_by: 'agentq' }] }),
      );
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      return sendError(res, { status: 404, message: `No route ${req.method} ${req.url}`, type: 'not_found' });
    }
    let request: DoubleRequest;
    try {
      request = JSON.parse(await readBody(req)) as DoubleRequest;
    } catch {
      return sendError(res, { status: 400, message: 'Body is not JSON', type: 'invalid_request_error' });
    }
    requests.push(request);
    receivedAt.push(Date.now());
    const rule = rules.find(
      (candidate) =>
        (candidate.times === undefined || candidate.used < candidate.times) && (candidate.match?.(request) ?? true),
    );
    // A refusal, not a 5xx: a test missing a rule sees its task fail at once with this message, where a
    // 5xx would be taken for an outage and waited out (models.<model>.outage).
    if (!rule) {
      return sendError(res, {
        status: 400,
        message: 'The OpenAI double has no rule for this request',
        type: 'double_unscripted',
      });
    }
    rule.used++;
    const reply = typeof rule.reply === 'function' ? await rule.reply(request) : rule.reply;
    if ('error' in reply) return sendError(res, reply.error);
    const id = `chatcmpl-double-${nextId++}`;
    if ('fault' in reply) return sendFault(res, id, request, reply.fault);
    if ('body' in reply) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(reply.body));
    }
    if (reply.delayMs) {
      const closed = await waitUnlessClosed(res, reply.delayMs);
      if (closed) return;
    }
    if (request.stream) return sendStream(res, id, request, reply, firstTokenAt);
    res.writeHead(200, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(completionBody(id, request, reply)));
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://${options.host ?? '127.0.0.1'}:${port}/v1`,
    requests,
    receivedAt,
    firstTokenAt,
    setRules,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Resolves true when the client went away first (an aborted request). */
function waitUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(false);
    }, ms);
    const onClose = () => {
      clearTimeout(timer);
      resolve(true);
    };
    res.once('close', onClose);
  });
}

async function sendFault(res: ServerResponse, id: string, request: DoubleRequest, fault: DoubleFault): Promise<void> {
  const body = JSON.stringify(completionBody(id, request, { content: 'this answer never arrives whole' }));
  switch (fault) {
    case 'hang':
      await waitUnlessClosed(res, 24 * 3600 * 1000);
      return;
    case 'oversized': {
      res.writeHead(200, { 'content-type': 'application/json' });
      const block = Buffer.alloc(1024 * 1024, ' ');
      // As fast as the client reads, until it has all or goes away.
      const body = (function* () {
        yield '{"padding":"';
        for (let sent = 0; sent < 80; sent++) yield block;
        yield '"}';
      })();
      // A client that stops reading (the behaviour under test) ends the pipeline: nothing to report.
      return pipeline(Readable.from(body), res).catch(() => undefined);
    }
    case 'not-json':
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('<html><body>502 Bad Gateway</body></html>');
    case 'no-choices':
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ ...JSON.parse(body), choices: [] }));
    case 'no-done':
      if (request.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Cut once the piece is on the wire.
        return void res.write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: request.model, choices: [{ index: 0, delta: { role: 'assistant', content: 'this ans' }, finish_reason: null }] })}\n\n`,
          () => setTimeout(() => res.socket?.destroy(), 10),
        );
      }
    // falls through: without a stream, the same as a cut-off body
    case 'truncated':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.write(body.slice(0, Math.floor(body.length / 2)));
      // Give the half a moment on the wire, then cut the connection as a dying proxy would.
      setTimeout(() => res.socket?.destroy(), 10);
      return;
  }
}

function sendError(res: ServerResponse, error: DoubleError): void {
  res.writeHead(error.status, { 'content-type': 'application/json', ...error.headers });
  res.end(
    JSON.stringify({
      error: { message: error.message, type: error.type ?? 'api_error', param: null, code: error.code ?? null },
    }),
  );
}

function wireToolCalls(id: string, answer: DoubleAnswer) {
  return (answer.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${id.slice(-6)}_${index}`,
    type: 'function' as const,
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

function usageOf(request: DoubleRequest, answer: DoubleAnswer) {
  // Without a scripted figure, a rough count keeps usage non-zero and growing with the context.
  const promptTokens = answer.usage?.promptTokens ?? Math.ceil(JSON.stringify(request.messages).length / 4);
  const completionTokens =
    answer.usage?.completionTokens ??
    Math.ceil(((answer.content ?? '').length + JSON.stringify(answer.toolCalls ?? []).length) / 4);
  const cached = answer.usage?.cachedPromptTokens;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(cached ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

function completionBody(id: string, request: DoubleRequest, answer: DoubleAnswer) {
  const toolCalls = wireToolCalls(id, answer);
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.content ?? null,
          ...(answer.reasoning ? { reasoning_content: answer.reasoning } : {}),
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        logprobs: null,
      },
    ],
    usage: usageOf(request, answer),
  };
}

async function sendStream(
  res: ServerResponse,
  id: string,
  request: DoubleRequest,
  answer: DoubleAnswer,
  firstTokenAt: number[],
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...answer.headers });
  const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: request.model };
  let sentText = false;
  const send = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (answer.chunkDelayMs && !res.destroyed) await new Promise((resolve) => setTimeout(resolve, answer.chunkDelayMs));
    res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  };
  await send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  if (answer.reasoning) await send([{ index: 0, delta: { reasoning_content: answer.reasoning }, finish_reason: null }]);
  // With a pace, a piece every few characters; without, three pieces.
  for (const piece of splitInto(
    answer.content ?? '',
    answer.chunkDelayMs ? Math.ceil((answer.content ?? '').length / 4) : 3,
  )) {
    await send([{ index: 0, delta: { content: piece }, finish_reason: null }]);
    if (!sentText) firstTokenAt.push(Date.now());
    sentText = true;
  }
  for (const [index, call] of wireToolCalls(id, answer).entries()) {
    await send([
      {
        index: 0,
        delta: {
          tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
        },
        finish_reason: null,
      },
    ]);
    for (const piece of splitInto(call.function.arguments, 2)) {
      await send([
        { index: 0, delta: { tool_calls: [{ index, function: { arguments: piece } }] }, finish_reason: null },
      ]);
    }
  }
  await send([{ index: 0, delta: {}, finish_reason: answer.toolCalls?.length ? 'tool_calls' : 'stop' }]);
  if (request.stream_options?.include_usage) await send([], { usage: usageOf(request, answer) });
  res.end('data: [DONE]\n\n');
}

function splitInto(text: string, parts: number): string[] {
  if (!text) return [];
  const size = Math.ceil(text.length / parts);
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

/** The first user message of a request (the task's prompt), for `match` functions. */
export function firstUserText(request: DoubleRequest): string {
  return request.messages.find((message) => message.role === 'user')?.content ?? '';
}

/**
 * What is read of an MCP server's answer is bounded (AGENTQ_MCP_ANSWER_MB): a server that answers with
 * hundreds of MB, or with a stream that never ends, is cut at the bound, never read whole into the
 * worker's memory. A remote server's answer is one HTTP body (JSON, an error page or an SSE stream);
 * a stdio server's is one line (jailed-stdio-transport.ts). Past the bound nothing more is read (the
 * body is cancelled) and the requests it answered fail with McpAnswerTooLargeError, which the model
 * reads as an instruction to ask for less.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ToolError } from '../errors.js';

/**
 * The JSON-RPC error code of the answer this client gives itself, in an SSE stream it cut, for a request
 * whose answer was too large (the SDK reads it as the server's): in the range JSON-RPC leaves to
 * implementations, clear of the SDK's own codes.
 */
const ANSWER_TOO_LARGE_CODE = -32_099;

export class McpAnswerTooLargeError extends ToolError {
  constructor(readonly maxBytes: number) {
    super(
      'answer_too_large',
      `the server's answer was larger than ${maxBytes} bytes (AGENTQ_MCP_ANSWER_MB), and the rest of it was not read`,
    );
  }
}

/** Whether `error` says an answer was cut at the bound (thrown here, or the error answer given in a cut stream). */
export function isAnswerTooLarge(error: unknown): boolean {
  return error instanceof McpAnswerTooLargeError || (error instanceof McpError && error.code === ANSWER_TOO_LARGE_CODE);
}

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Statuses whose response has no body (a Response with one cannot be made). */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch` with every answer's body cut past `maxBytes`. An SSE stream answering requests ends, once cut,
 * with an error answer for each of them (the SDK would otherwise wait for their answers until their
 * timeout); any other body errors with McpAnswerTooLargeError (the request that reads it rejects with
 * it). `onStreamTooLarge`: a stream that answers no request (the session's GET stream) was cut; the
 * SDK would open it again and again, so the caller ends the session.
 */
export function cappedFetch(fetch: Fetch, options: { maxBytes: number; onStreamTooLarge: () => void }): Fetch {
  const { maxBytes } = options;
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.body || NO_BODY.has(response.status)) return response;
    const ids = requestIds(init?.body);
    const stream = /^\s*text\/event-stream\s*(;|$)/i.test(response.headers.get('content-type') ?? '');
    const reader = response.body.getReader();
    let read = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        read += value.byteLength;
        if (read <= maxBytes) return controller.enqueue(value);
        // Not a byte more: the connection is cancelled, whatever the server still has to send.
        await reader.cancel().catch(() => undefined);
        if (stream && ids.length) {
          controller.enqueue(new TextEncoder().encode(errorEvents(ids, maxBytes)));
          return controller.close();
        }
        if (!ids.length) options.onStreamTooLarge();
        controller.error(new McpAnswerTooLargeError(maxBytes));
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** The ids of the JSON-RPC requests a POST's body carries (none for notifications, answers, a GET). */
function requestIds(body: unknown): Array<string | number> {
  if (typeof body !== 'string') return [];
  try {
    const parsed = JSON.parse(body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((message: { id?: unknown; method?: unknown }) =>
      typeof message?.method === 'string' && (typeof message.id === 'string' || typeof message.id === 'number')
        ? [message.id]
        : [],
    );
  } catch {
    return [];
  }
}

/**
 * The events that end a cut SSE stream: a blank line ends whatever event was cut (its half is not valid
 * JSON-RPC, and is dropped), then an error answer per request.
 */
function errorEvents(ids: Array<string | number>, maxBytes: number): string {
  const answers = ids.map((id) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: ANSWER_TOO_LARGE_CODE, message: new McpAnswerTooLargeError(maxBytes).message },
    }),
  );
  return `\n\n${answers.map((answer) => `event: message\ndata: ${answer}\n\n`).join('')}`;
}

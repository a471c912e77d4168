/**
 * The chunks of a streamed chat completion, as they arrive. The SDK's own reader (its `Stream`) reads a
 * body through a web stream, three async generators and a byte-by-byte search for each message's end:
 * a worker spent about 70 µs a streamed call on it (a whole answer's call costs about 85 in all). This
 * reads the Node stream the keep-alive fetch answers with (any other body: its web stream), with the
 * contract's SSE reader, and does what the SDK's reader does with each message: `[DONE]` ends the
 * answer, an `error` in one fails it (an `APIError`, as the SDK's), anything else is a chunk. A body past
 * ANSWER_LIMIT_BYTES fails as a broken stream.
 */
import { createSseReader } from '@agentq/contract';
import { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { ANSWER_LIMIT_BYTES, nodeBodyOf } from './keep-alive-fetch.js';

export async function* completionChunks(response: Response): AsyncGenerator<ChatCompletionChunk> {
  const body: AsyncIterable<Uint8Array> | null = nodeBodyOf(response) ?? response.body;
  if (!body) throw new Error('the streamed answer has no body');
  const reader = createSseReader();
  const utf8 = new TextDecoder();
  let received = 0;
  let done = false;
  // Leaving the loop early (an error, a chunk the caller refused) destroys the body: the connection
  // then closes, not left half read.
  for await (const bytes of body) {
    received += bytes.length;
    if (received > ANSWER_LIMIT_BYTES)
      throw new Error(`the streamed answer is larger than ${ANSWER_LIMIT_BYTES / 1024 / 1024} MiB`);
    for (const message of reader.push(utf8.decode(bytes, { stream: true }))) {
      // (after `[DONE]` the rest is read, for the connection's sake, and left)
      if (done) continue;
      if (message.data.startsWith('[DONE]')) {
        done = true;
        continue;
      }
      const data = JSON.parse(message.data) as (ChatCompletionChunk & { error?: unknown }) | null;
      if (data?.error)
        throw new APIError(undefined, data.error as Record<string, unknown>, undefined, response.headers);
      if (data) yield data;
    }
  }
}

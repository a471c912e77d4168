/**
 * A streamed completion's chunks, read from the keep-alive fetch's Node stream (or any web body) as the
 * SDK's reader would: messages split anywhere, every line ending, comments, `[DONE]`, an error in the
 * stream, a body that does not stop.
 */
import { Readable } from 'node:stream';
import { APIError } from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { completionChunks } from './completion-chunks.js';
import { ANSWER_LIMIT_BYTES, StreamedResponse } from './keep-alive-fetch.js';

const init = { status: 200, headers: { 'content-type': 'text/event-stream' } };
const chunk = (content: string) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});
// (as undici's body gives them: Buffers)
const bodyOf = (parts: Array<string | Buffer>) => Readable.from(parts.map((part) => Buffer.from(part)));
const streamed = (parts: Array<string | Buffer>) => new StreamedResponse(bodyOf(parts), init);
const read = async (response: Response) => {
  const chunks = [];
  for await (const each of completionChunks(response)) chunks.push(each);
  return chunks;
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('completion chunks', () => {
  const text = 'déjà vu ✓ 🙂';
  const wire = [
    ': a comment, as some providers send while the model thinks\n\n',
    `data: ${JSON.stringify(chunk(text))}\r\n\r\n`,
    `data:${JSON.stringify(chunk('second'))}\r\r`,
    `data: ${JSON.stringify(chunk('third'))}\n\n`,
    'data: [DONE]\n\n',
    // After [DONE]: read (for the connection), not taken.
    `data: ${JSON.stringify(chunk('after done'))}\n\n`,
  ].join('');

  it('reads each message whole, wherever the bytes were split, and stops taking at [DONE]', async () => {
    const bytes = Buffer.from(wire);
    const expected = [text, 'second', 'third'];
    // Split at every byte: inside a UTF-8 character, a CRLF, a field name.
    for (let at = 1; at < bytes.length; at += 7) {
      const chunks = await read(streamed([bytes.subarray(0, at), bytes.subarray(at)]));
      expect(chunks.map((each) => each.choices[0]!.delta.content)).toEqual(expected);
    }
    const oneByteEach = await read(streamed([...bytes].map((byte) => Buffer.from([byte]))));
    expect(oneByteEach.map((each) => each.choices[0]!.delta.content)).toEqual(expected);
  });

  it("reads the fetch's Node stream as it is, with no web stream around it", async () => {
    const toWeb = vi.spyOn(Readable, 'toWeb');
    const response = streamed([wire]);
    expect(await read(response)).toHaveLength(3);
    expect(toWeb).not.toHaveBeenCalled();
    expect(response.bodyUsed).toBe(true);
  });

  it("reads any other response's web stream alike", async () => {
    const response = new Response(wire, init);
    expect((await read(response)).map((each) => each.choices[0]!.delta.content)).toEqual([text, 'second', 'third']);
  });

  it('reads a streamed response whose body something read first as a web stream', async () => {
    const response = streamed([wire]);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe(wire);
    reader.releaseLock();
    await expect(read(response)).resolves.toEqual([]);
  });

  it('fails with an APIError, as the SDK does, on an error sent in the stream', async () => {
    const error = { message: 'The server had an error while processing your request.', type: 'server_error' };
    const response = streamed([`data: ${JSON.stringify(chunk('a'))}\n\n`, `data: ${JSON.stringify({ error })}\n\n`]);
    const chunks: unknown[] = [];
    const reading = (async () => {
      for await (const each of completionChunks(response)) chunks.push(each);
    })();
    await expect(reading).rejects.toBeInstanceOf(APIError);
    await expect(reading).rejects.toThrow(error.message);
    expect(chunks).toHaveLength(1);
  });

  it('fails on a message that is not JSON, and destroys the body it leaves', async () => {
    const body = bodyOf(['data: {"choices": [\n\n', `data: ${JSON.stringify(chunk('never'))}\n\n`]);
    await expect(read(new StreamedResponse(body, init))).rejects.toThrow(SyntaxError);
    expect(body.destroyed).toBe(true);
  });

  it('fails on a body past the answer limit, without holding it', async () => {
    const block = Buffer.alloc(1024 * 1024, ' ');
    let sent = 0;
    const body = new Readable({
      read() {
        sent += block.length;
        this.push(sent > 2 * ANSWER_LIMIT_BYTES ? null : block);
      },
    });
    await expect(read(new StreamedResponse(body, init))).rejects.toThrow(/larger than 64 MiB/);
    expect(sent).toBeLessThan(ANSWER_LIMIT_BYTES + 4 * block.length);
    expect(body.destroyed).toBe(true);
  });
});

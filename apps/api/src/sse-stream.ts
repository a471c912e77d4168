/**
 * An open Server-Sent Events response, written frame by frame. A frame is built once however many
 * clients follow its event (`sseFrame`). Over HTTP/1.1 the body is chunked, and each frame goes to the
 * connection as one write of a chunk framed once per event. `response.write` corks the socket, writes
 * a chunk's size, its bytes and a CRLF as three buffers and uncorks on the next tick: with a thousand
 * followers, one write each takes about 40% less of the API's CPU per event (bench B7). An HTTP/1.0
 * client (no chunks), or a response that has no connection of its own yet (a pipelined request waiting
 * its turn), is written through `response.write`, as any response.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** A frame's bytes as one chunk of a chunked body (`chunk`), and as they are (`text`: a view of the same bytes). */
export interface SseFrame {
  text: Buffer;
  chunk: Buffer;
}

export function sseFrame(text: string): SseFrame {
  const length = Buffer.byteLength(text);
  const head = `${length.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(head.length + length + 2);
  chunk.write(head, 0, 'latin1');
  chunk.write(text, head.length);
  chunk.write('\r\n', head.length + length, 'latin1');
  return { text: chunk.subarray(head.length, head.length + length), chunk };
}

export class SseStream {
  /** The connection frames are written to directly, once the headers are on it; else none. */
  private readonly socket: Socket | undefined;

  constructor(
    request: IncomingMessage,
    private readonly response: ServerResponse,
    headers: OutgoingHttpHeaders,
  ) {
    const chunked = request.httpVersionMajor > 1 || (request.httpVersionMajor === 1 && request.httpVersionMinor >= 1);
    // Chunked said outright (Node's own choice for HTTP/1.1): `end()` then writes the last chunk.
    response.writeHead(200, chunked ? { ...headers, 'transfer-encoding': 'chunked' } : headers);
    response.flushHeaders();
    // A response has its socket once it is its turn on the connection; the headers went to it then.
    this.socket = chunked ? (response.socket ?? undefined) : undefined;
  }

  send(frame: SseFrame): void {
    // Once ended, the kept connection may carry the next response (a proxy's, maybe another user's):
    // nothing more of this stream goes on it.
    if (this.response.writableEnded) return;
    // A connection the client closed (its FIN ends ours) takes nothing more, as the response would not.
    if (this.socket) {
      if (this.socket.writable) this.socket.write(frame.chunk);
    } else this.response.write(frame.text);
  }

  /** Bytes sent and not yet taken by the connection. */
  get backlog(): number {
    return this.response.writableLength;
  }

  /** Resolves once what waits to be sent was handed to the kernel, or the client went away. */
  drained(): Promise<void> {
    // Writes to the socket directly: the response never says it needed a drain, the socket does.
    const emitter = this.socket ?? this.response;
    return new Promise((resolve) => {
      const done = () => {
        emitter.off('drain', done);
        this.response.off('close', done);
        resolve();
      };
      emitter.on('drain', done);
      this.response.on('close', done);
    });
  }

  /** The body's end (its last chunk), the connection kept. */
  end(): void {
    this.response.end();
  }

  /** The connection closed at once, and what waits to be sent dropped with it. */
  destroy(): void {
    this.response.destroy();
  }
}

/**
 * Reading a `text/event-stream` as it arrives (the framing of `GET /v1/tasks/:id/events`, and of a
 * streamed model answer), for every client: the dashboard, the CLI, the worker, the tests. Chunks may
 * split a line or a message anywhere. Each chunk is searched once and each byte copied at most once, so
 * a stream costs time in proportion to its length, whatever its messages' sizes (bench/sse-reader.mjs:
 * a 64 MiB message in 64 KiB chunks was 36 s when the reader searched all it held at each chunk).
 */

export interface SseMessage {
  /** The `id:` field: the event's `seq`, to resume from with `Last-Event-ID`. */
  id?: string;
  event?: string;
  data: string;
}

/**
 * @example
 * const reader = createSseReader();
 * for (const message of reader.push(chunk)) console.log(message.event, JSON.parse(message.data));
 */
export function createSseReader(): { push(chunk: string): SseMessage[] } {
  // The start of a line whose end has not come yet, as the pieces it came in: joined once, at its end.
  let pending: string[] = [];
  // The last chunk ended with `\r`: a `\n` first in the next one is the rest of that `\r\n`.
  let afterCr = false;
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  const take = (line: string, complete: SseMessage[]) => {
    if (line === '') {
      // A blank line ends a message; one without data is nothing (a keep-alive comment's end).
      if (message.data.length)
        complete.push({
          ...(message.id !== undefined ? { id: message.id } : {}),
          ...(message.event !== undefined ? { event: message.event } : {}),
          data: message.data.join('\n'),
        });
      message = { data: [] };
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + (line.startsWith(' ', colon + 1) ? 2 : 1));
    if (field === 'data') message.data.push(value);
    else if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
  };
  return {
    push(chunk) {
      const complete: SseMessage[] = [];
      if (chunk === '') return complete;
      let start = afterCr && chunk.startsWith('\n') ? 1 : 0;
      afterCr = false;
      // Lines end with \n, \r\n or \r: the next of each is looked up once, not once per line.
      let lf = chunk.indexOf('\n', start);
      let cr = chunk.indexOf('\r', start);
      while (lf !== -1 || cr !== -1) {
        const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
        let line = chunk.slice(start, end);
        if (pending.length) {
          pending.push(line);
          line = pending.join('');
          pending = [];
        }
        take(line, complete);
        start = end === cr && lf === end + 1 ? end + 2 : end + 1;
        afterCr = end === cr && end + 1 === chunk.length;
        if (lf !== -1 && lf < start) lf = chunk.indexOf('\n', start);
        if (cr !== -1 && cr < start) cr = chunk.indexOf('\r', start);
      }
      if (start < chunk.length) pending.push(chunk.slice(start));
      return complete;
    },
  };
}

/**
 * Reading a `text/event-stream` as it arrives (the framing of `GET /v1/tasks/:id/events`), for every
 * client: the dashboard, the CLI, the tests. Chunks may split a line or a message anywhere.
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
  let buffer = '';
  // How far `buffer` was searched for a line's end: a long line split across many chunks is read once.
  let searched = 0;
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
      buffer += chunk;
      const complete: SseMessage[] = [];
      // Lines end with \n, \r\n or \r: the next of each is looked up once, not once per line.
      let start = 0;
      let lf = buffer.indexOf('\n', searched);
      let cr = buffer.indexOf('\r', searched);
      while (lf !== -1 || cr !== -1) {
        const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
        // A `\r` that ends the chunk may be half of a `\r\n` split across chunks: wait for the next one.
        if (end === cr && end === buffer.length - 1) break;
        take(buffer.slice(start, end), complete);
        start = end === cr && lf === end + 1 ? end + 2 : end + 1;
        if (lf !== -1 && lf < start) lf = buffer.indexOf('\n', start);
        if (cr !== -1 && cr < start) cr = buffer.indexOf('\r', start);
      }
      buffer = buffer.slice(start);
      searched = Math.max(0, (cr === -1 ? buffer.length + start : cr) - start);
      return complete;
    },
  };
}

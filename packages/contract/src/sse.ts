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
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  return {
    push(chunk) {
      buffer += chunk;
      const complete: SseMessage[] = [];
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
        // A `\r` that ends the chunk may be half of a `\r\n` split across chunks: wait for the next one.
        if (newline === buffer.length - 1 && buffer.endsWith('\r')) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          // A blank line ends a message; one without data is nothing (a keep-alive comment's end).
          if (message.data.length) complete.push({ ...(message.id !== undefined ? { id: message.id } : {}), ...(message.event !== undefined ? { event: message.event } : {}), data: message.data.join('\n') });
          message = { data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') message.data.push(value);
        else if (field === 'id') message.id = value;
        else if (field === 'event') message.event = value;
      }
      return complete;
    },
  };
}

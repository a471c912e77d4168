import { describe, expect, it } from 'vitest';
import { parseBatch } from './batch.js';
import { createSseReader } from './sse.js';

describe('reading an event stream', () => {
  it('reads messages split anywhere across chunks, with comments and multi-line data', () => {
    const stream =
      ': keep-alive\n\nid: 1\nevent: task.queued\ndata: {"a":1}\n\nid: 2\r\nevent: task.started\r\ndata: line one\r\ndata: line two\r\n\r\n';
    for (const size of [1, 3, 7, stream.length]) {
      const reader = createSseReader();
      const messages = [];
      for (let start = 0; start < stream.length; start += size)
        messages.push(...reader.push(stream.slice(start, start + size)));
      expect(messages).toEqual([
        { id: '1', event: 'task.queued', data: '{"a":1}' },
        { id: '2', event: 'task.started', data: 'line one\nline two' },
      ]);
    }
  });

  it('reads any mix of line ends (\\n, \\r\\n, \\r), fields and comments, however the stream is cut', () => {
    // A seeded generator: the same streams every run.
    let seed = 7;
    const random = (below: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % below;
    const ends = ['\n', '\r\n', '\r'];
    // A `\r` then a `\n` is one line end, `\r\n`: a `\r` is not followed by a `\n` end here.
    let last = '';
    const end = () => (last = ends[last === '\r' ? random(2) + 1 : random(3)]!);
    for (let round = 0; round < 200; round++) {
      let stream = '';
      last = '';
      const expected = [];
      for (let index = 0; index < 1 + random(6); index++) {
        if (random(4) === 0) stream += `: comment ${index}${end()}`;
        const lines = Array.from(
          { length: 1 + random(3) },
          (_, line) => `${'é'.repeat(random(3))}${line}: x${'y'.repeat(random(40))}`,
        );
        stream += `id: ${index}${end()}event: e${index}${end()}${lines.map((line) => `data: ${line}${end()}`).join('')}${end()}`;
        expected.push({ id: String(index), event: `e${index}`, data: lines.join('\n') });
      }
      // A `\r` last only ends its line once what follows shows it is not half of a `\r\n`.
      stream += '\n';
      const reader = createSseReader();
      const messages = [];
      for (let start = 0; start < stream.length;) {
        const size = 1 + random(30);
        messages.push(...reader.push(stream.slice(start, start + size)));
        start += size;
      }
      expect(messages).toEqual(expected);
    }
  });

  it('ends a line at a \\r that ends a chunk, and takes a \\n opening the next as its pair', () => {
    const reader = createSseReader();
    // The `\r` ends the line at once: a message ended by `\r\r` is read without waiting for more.
    expect(reader.push('data: a\r')).toEqual([]);
    expect(reader.push('')).toEqual([]);
    expect(reader.push('\ndata: b\r')).toEqual([]);
    expect(reader.push('\r')).toEqual([{ data: 'a\nb' }]);
    expect(reader.push('\ndata: c\n\n')).toEqual([{ data: 'c' }]);
  });

  it('reads a stream cut in three anywhere as it reads it whole', () => {
    const stream = ': hi\rid: 7\r\nevent: e\ndata: a\r\rid: 8\rdata: b\r\n\r\ndata:c\n\r\n';
    const whole = createSseReader().push(stream);
    expect(whole).toEqual([{ id: '7', event: 'e', data: 'a' }, { id: '8', data: 'b' }, { data: 'c' }]);
    for (let first = 0; first <= stream.length; first++)
      for (let second = first; second <= stream.length; second++) {
        const reader = createSseReader();
        const pieces = [stream.slice(0, first), stream.slice(first, second), stream.slice(second)];
        expect(pieces.flatMap((piece) => reader.push(piece))).toEqual(whole);
      }
  });

  it('reads a message that spans every chunk at the cost per byte of many small ones', () => {
    // A model's answer may stream one message of up to 64 MiB. A reader that searched (or copied) all it
    // held at each chunk took 3.6 s for 16 MiB as one message, and 0.06 s for 16 MiB of small ones (its
    // time grew with the square of a message's length); one that reads each byte once takes about as
    // long for both. The same bytes as small messages measure the machine's speed of the moment; the
    // least of 3 runs each, taken in turn, in CPU time (which other processes on the cores do not add
    // to), keeps its noise out.
    const MIB = 1024 * 1024;
    const chunked = (stream: string) => {
      const chunks = [];
      for (let start = 0; start < stream.length; start += 64 * 1024)
        chunks.push(stream.slice(start, start + 64 * 1024));
      return chunks;
    };
    const delta = `data: {"choices":[{"delta":{"content":"${'y'.repeat(200)}"}}]}\n\n`;
    const streams = {
      long: chunked(`data: ${'x'.repeat(16 * MIB)}\n\n`),
      short: chunked(delta.repeat(Math.ceil((16 * MIB) / delta.length))),
    };
    const least = { long: Infinity, short: Infinity };
    for (let run = 0; run < 3; run++)
      for (const name of ['long', 'short'] as const) {
        const started = process.cpuUsage();
        const reader = createSseReader();
        let messages = 0;
        for (const chunk of streams[name]) messages += reader.push(chunk).length;
        const { user, system } = process.cpuUsage(started);
        least[name] = Math.min(least[name], (user + system) / 1000);
        expect(messages).toBe(name === 'long' ? 1 : Math.ceil((16 * MIB) / delta.length));
      }
    expect(
      least.long,
      `16 MiB as one message took ${least.long.toFixed(1)} ms, as small ones ${least.short.toFixed(1)} ms`,
    ).toBeLessThan(4 * least.short);
  });
});

describe('a batch of tasks', () => {
  it('takes JSON tasks and plain prompts, skipping blank and # lines, with defaults', () => {
    expect(
      parseBatch('# my batch\nSay hi\n\n{"prompt": "Run it", "agent": "coder"}\n', { agent: 'casual', priority: 7 }),
    ).toEqual([
      { prompt: 'Say hi', agent: 'casual', priority: 7 },
      { prompt: 'Run it', agent: 'coder', priority: 7 },
    ]);
  });

  it('names the line that is broken JSON', () => {
    expect(() => parseBatch('ok\n\n{"prompt": ')).toThrow(/^Line 3 starts with "\{" but is not valid JSON/);
  });
});

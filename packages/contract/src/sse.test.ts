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

import { describe, expect, it } from 'vitest';
import { parseBatch } from './batch.js';
import { createSseReader } from './sse.js';

describe('reading an event stream', () => {
  it('reads messages split anywhere across chunks, with comments and multi-line data', () => {
    const stream = ': keep-alive\n\nid: 1\nevent: task.queued\ndata: {"a":1}\n\nid: 2\r\nevent: task.started\r\ndata: line one\r\ndata: line two\r\n\r\n';
    for (const size of [1, 3, 7, stream.length]) {
      const reader = createSseReader();
      const messages = [];
      for (let start = 0; start < stream.length; start += size) messages.push(...reader.push(stream.slice(start, start + size)));
      expect(messages).toEqual([
        { id: '1', event: 'task.queued', data: '{"a":1}' },
        { id: '2', event: 'task.started', data: 'line one\nline two' },
      ]);
    }
  });
});

describe('a batch of tasks', () => {
  it('takes JSON tasks and plain prompts, skipping blank and # lines, with defaults', () => {
    expect(parseBatch('# my batch\nSay hi\n\n{"prompt": "Run it", "agent": "coder"}\n', { agent: 'casual', priority: 7 })).toEqual([
      { prompt: 'Say hi', agent: 'casual', priority: 7 },
      { prompt: 'Run it', agent: 'coder', priority: 7 },
    ]);
  });

  it('names the line that is broken JSON', () => {
    expect(() => parseBatch('ok\n\n{"prompt": ')).toThrow(/^Line 3 starts with "\{" but is not valid JSON/);
  });
});

import { describe, expect, it } from 'vitest';
import { BatchLineError, parseBatchLines } from './batch.js';

describe('a batch as people write it', () => {
  it('fills what a line leaves out, but never an agent into a task that gives its own plan', () => {
    const plan = [{ id: '1', agent: 'file', task: 'write it' }];
    const text = [
      'plain prompt',
      '# a comment',
      '',
      JSON.stringify({ prompt: 'json', priority: 9 }),
      JSON.stringify({ prompt: 'planned', plan }),
    ].join('\n');
    expect(parseBatchLines(text, { agent: 'coder', priority: 3 })).toEqual([
      { line: 1, task: { prompt: 'plain prompt', agent: 'coder', priority: 3 } },
      { line: 4, task: { prompt: 'json', agent: 'coder', priority: 9 } },
      { line: 5, task: { prompt: 'planned', priority: 3, plan } },
    ]);
  });

  it('names the line that is not JSON', () => {
    expect(() => parseBatchLines('fine\n{"prompt": ')).toThrow(BatchLineError);
    expect(() => parseBatchLines('fine\n{"prompt": ')).toThrow(/^Line 2 starts with "\{" but is not valid JSON/);
  });
});

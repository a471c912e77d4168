import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { eventLine, RunEvents } from './run-events.js';

const body = (text: string) => `"taskId":"t","type":"reasoning","data":{"text":${JSON.stringify(text)}}}`;

describe('the events a run holds for its end commit', () => {
  it('packs the lines it read and wrote, as the script writes them, and lets the run go', () => {
    const runs = new RunEvents();
    runs.start('r', { taskId: 't', rootId: 't', lines: [eventLine('t', 't', 1, body('queued'))], seq: 1 });
    runs.added('r', [body('a'), body('b')], 3);
    const packed = runs.pack('r', [body('end')])!;
    expect(packed.seq).toBe(3);
    expect(inflateRawSync(packed.blob).toString('utf8').split('\n')).toEqual(
      ['queued', 'a', 'b', 'end'].map((text, index) => eventLine('t', 't', index + 1, body(text))),
    );
    expect(runs.pack('r', [])).toBeUndefined();
    expect(runs.heldBytes).toBe(0);
  });

  it("lets a run go when another writer's events came between its own", () => {
    const runs = new RunEvents();
    runs.start('r', { taskId: 't', rootId: 't', lines: [], seq: 4 });
    runs.added('r', [body('a')], 6);
    expect(runs.pack('r', [])).toBeUndefined();
    expect(runs.heldBytes).toBe(0);
  });

  it('holds at most 64 MB of every run together, letting the oldest runs go', () => {
    const runs = new RunEvents();
    const line = 'x'.repeat(400 * 1024);
    for (let index = 0; index < 200; index++)
      runs.start(`r${index}`, { taskId: 't', rootId: 't', lines: [line], seq: 1 });
    expect(runs.size).toBe(163);
    expect(runs.heldBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(runs.pack('r0', [])).toBeUndefined();
    expect(runs.pack('r199', [])).toBeDefined();
  });
});

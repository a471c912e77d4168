import { describe, expect, it } from 'vitest';
import { eventLine, RunEvents } from './run-events.js';
import { inflatePacked } from './task-events.js';

const body = (text: string) => `"taskId":"t","type":"reasoning","data":{"text":${JSON.stringify(text)}}}`;

describe('the events a run holds for its end commit', () => {
  it('packs the lines the run wrote, as the script writes them, after the seq it started at, and lets the run go', () => {
    const runs = new RunEvents();
    runs.start('r', { taskId: 't', rootId: 't', seq: 1, lines: [] });
    runs.added('r', [body('a'), body('b')], 3);
    const packed = runs.pack('r', [body('end')])!;
    expect(packed).toMatchObject({ from: 1, seq: 3 });
    // (each part of a packed string ends with a newline: the next part's lines follow it)
    expect(inflatePacked(packed.blob)).toBe(
      ['a', 'b', 'end'].map((text, index) => `${eventLine('t', 't', index + 2, body(text))}\n`).join(''),
    );
    expect(runs.pack('r', [])).toBeUndefined();
    expect(runs.heldBytes).toBe(0);
  });

  it("packs every line of a first run, its task's first event included, as following seq 0", () => {
    const runs = new RunEvents();
    const first = eventLine('t', 't', 1, body('queued'));
    runs.start('r', { taskId: 't', rootId: 't', seq: 1, lines: [first] });
    runs.added('r', [body('a')], 2);
    const packed = runs.pack('r', [body('end')])!;
    expect(packed).toMatchObject({ from: 0, seq: 2 });
    expect(inflatePacked(packed.blob)).toBe(
      `${[first, eventLine('t', 't', 2, body('a')), eventLine('t', 't', 3, body('end'))].join('\n')}\n`,
    );
  });

  it("lets a run go when another writer's events came between its own", () => {
    const runs = new RunEvents();
    runs.start('r', { taskId: 't', rootId: 't', seq: 4, lines: [] });
    runs.added('r', [body('a')], 6);
    expect(runs.pack('r', [])).toBeUndefined();
    expect(runs.heldBytes).toBe(0);
  });

  it('holds at most 64 MB of every run together, letting the oldest runs go', () => {
    const runs = new RunEvents();
    const line = 'x'.repeat(400 * 1024);
    for (let index = 0; index < 200; index++) {
      runs.start(`r${index}`, { taskId: 't', rootId: 't', seq: 1, lines: [] });
      runs.added(`r${index}`, [line], 2);
    }
    expect(runs.size).toBe(163);
    expect(runs.heldBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(runs.pack('r0', [])).toBeUndefined();
    expect(runs.pack('r199', [])).toBeDefined();
  });

  it('lets a run go once its own lines pass 512 KB', () => {
    const runs = new RunEvents();
    runs.start('r', { taskId: 't', rootId: 't', seq: 1, lines: [] });
    runs.added('r', ['x'.repeat(300 * 1024)], 2);
    expect(runs.size).toBe(1);
    runs.added('r', ['x'.repeat(300 * 1024)], 3);
    expect(runs.size).toBe(0);
    expect(runs.heldBytes).toBe(0);
  });
});

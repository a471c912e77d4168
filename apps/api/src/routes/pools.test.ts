import { describe, expect, it } from 'vitest';
import { finishedPerMinute } from './pools.js';

const minute = 60_000;
const now = 1_000 * minute + 30_000;

describe('jobs per minute', () => {
  it('counts the running minute from what finished since BullMQ last wrote a point', () => {
    const series = finishedPerMinute({ meta: { count: 10, prevTS: now - 10_000, prevCount: 7 }, data: [2, 1] }, now);
    expect(series).toHaveLength(15);
    expect(series.slice(-3)).toEqual([1, 2, 3]);
  });

  it('falls to 0 once a pool is idle, moving its last busy minutes back', () => {
    const series = finishedPerMinute(
      { meta: { count: 10, prevTS: now - 5 * minute, prevCount: 7 }, data: [2, 1] },
      now,
    );
    expect(series.slice(-8)).toEqual([1, 2, 3, 0, 0, 0, 0, 0]);
    expect(series.at(-1)).toBe(0);
  });

  it('is all zeros for a pool that never ran a job', () => {
    expect(finishedPerMinute({ meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [] }, now)).toEqual(
      new Array(15).fill(0),
    );
  });
});

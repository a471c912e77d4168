import { describe, expect, it } from 'vitest';
import { shownFileTime, tarFileTime } from './file-times.js';

describe('shownFileTime', () => {
  it('shows a time as RFC 3339, and one past years 1 to 9999 as the nearest it can say', () => {
    expect(shownFileTime(1717243200000)).toBe('2024-06-01T12:00:00.000Z');
    expect(shownFileTime(1e17)).toBe('9999-12-31T23:59:59.999Z');
    expect(shownFileTime(-1e17)).toBe('0001-01-01T00:00:00.000Z');
    expect(shownFileTime(Number.POSITIVE_INFINITY)).toBe('9999-12-31T23:59:59.999Z');
    expect(shownFileTime(Number.NaN)).toBe('1970-01-01T00:00:00.000Z');
  });
});

describe('tarFileTime', () => {
  it("keeps a time tar's own field holds there alone", () => {
    expect(tarFileTime(1717243200500)).toEqual({ mtime: new Date(1717243200000) });
  });

  it('gives a time past 2038 or before 1970 as a pax mtime, the field held to its range', () => {
    expect(tarFileTime(4102444800000)).toEqual({ mtime: new Date((2 ** 31 - 1) * 1000), pax: { mtime: '4102444800' } });
    expect(tarFileTime(1e17)).toEqual({ mtime: new Date((2 ** 31 - 1) * 1000), pax: { mtime: '100000000000000' } });
    expect(tarFileTime(-1e17)).toEqual({ mtime: new Date(0), pax: { mtime: '-100000000000000' } });
    expect(tarFileTime(-1500)).toEqual({ mtime: new Date(0), pax: { mtime: '-2' } });
  });
});

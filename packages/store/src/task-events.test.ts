import { describe, expect, it } from 'vitest';
import { deflateOpen, inflatePacked, storedOpen } from './task-events.js';

describe('a packed string of parts', () => {
  it('reads as one text: stored blocks of any size (one holds 65,535 bytes), then deflated parts', () => {
    for (const size of [0, 1, 65_535, 65_536, 200_000]) {
      const first = `${'é'.repeat(size >> 1)}${size % 2 ? 'a' : ''}\n`;
      const packed = Buffer.concat([storedOpen(first), deflateOpen("a run's lines\n"), storedOpen('more\n')]);
      expect(inflatePacked(packed)).toBe(`${first}a run's lines\nmore\n`);
    }
  });
});

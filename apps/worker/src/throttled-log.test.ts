import { afterEach, expect, it, vi } from 'vitest';
import { throttledLog } from './throttled-log.js';

afterEach(() => {
  vi.useRealTimers();
});

it('writes one line per interval, saying how many it held back', () => {
  vi.useFakeTimers();
  vi.setSystemTime(0);
  const lines: string[] = [];
  const log = throttledLog({ intervalMs: 10_000, write: (line) => lines.push(line) });
  log('lock lost for job 1');
  log('lock lost for job 2');
  log('lock lost for job 3');
  vi.setSystemTime(10_000);
  log('lock lost for job 4');
  expect(lines).toEqual(['lock lost for job 1', 'lock lost for job 4 (and 2 more like it since the last report)']);
});

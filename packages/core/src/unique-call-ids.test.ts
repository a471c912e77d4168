import { describe, expect, it } from 'vitest';
import { CALL_ID_PATTERN, MAX_CALL_ID_LENGTH } from '@agentq/contract';
import { uniqueCallIds } from './unique-call-ids.js';

const idsOf = (ids: string[], step = 3) =>
  uniqueCallIds({ calls: ids.map((id) => ({ id, name: 'bash', arguments: '{}' })), step }).map((call) => call.id);

describe('uniqueCallIds', () => {
  it('keeps the ids a model gave once, and gives a second of an id its place', () => {
    expect(idsOf(['call_abc', 'toolu_01:x.y-z', 'call_abc'])).toEqual(['call_abc', 'toolu_01:x.y-z', 'call_abc_3']);
  });

  it('replaces an id the API could not name: too long, odd characters, none', () => {
    const long = `call_${'x'.repeat(MAX_CALL_ID_LENGTH)}`;
    expect(idsOf([long, 'a/b?c#d', 'line\nbreak', '\u0000', '', 'é'])).toEqual([
      'call_3_1',
      'call_3_2',
      'call_3_3',
      'call_3_4',
      'call_3_5',
      'call_3_6',
    ]);
  });

  it('never makes an id longer than the API takes, nor one another call has', () => {
    const longest = 'y'.repeat(MAX_CALL_ID_LENGTH);
    // The second `longest` cannot grow a suffix; the model took the ids the loop would give.
    const ids = idsOf([longest, 'call_3_3', longest, 'call_3_3_2', '', 'call_3_5'], 3);
    expect(ids).toEqual([longest, 'call_3_3', 'call_3_3_3', 'call_3_3_2', 'call_3_5_2', 'call_3_5']);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(CALL_ID_PATTERN);
  });
});

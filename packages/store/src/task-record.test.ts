/**
 * Records stored before interrupts had kinds and before tasks had depths read as they did: a question
 * without `kind`, a plan's subtask without `depth`. And each kind of interrupt shows as its `waitingFor`.
 */
import { describe, expect, it } from 'vitest';
import { parseTaskRecord, taskView } from './task-record.js';

const base = { id: 'a', rootId: 'a', tenant: 't', agent: 'coder', prompt: 'p', status: 'waiting', createdAt: 'now' };

describe('a stored task record', () => {
  it('reads a question stored before interrupts had kinds', () => {
    const pending = JSON.stringify({ callId: 'q', protocol: 'native', question: 'Which file?' });
    const view = taskView(parseTaskRecord({ ...base, pending })!);
    expect(view.question).toBe('Which file?');
    expect(view.waitingFor).toEqual({ kind: 'answer', question: 'Which file?' });
  });

  it("says a delegated child's depth, and a plan's subtask's from its parent", () => {
    expect(taskView(parseTaskRecord({ ...base, status: 'queued' })!).depth).toBe(0);
    expect(taskView(parseTaskRecord({ ...base, id: 'a.v1.s1', parentId: 'a', status: 'queued' })!).depth).toBe(1);
    expect(
      taskView(parseTaskRecord({ ...base, id: 'a.v1.s1.c2.1', parentId: 'a.v1.s1', depth: '2', status: 'queued' })!)
        .depth,
    ).toBe(2);
  });

  it('shows each kind of interrupt as its waitingFor', () => {
    const waiting = (pending: unknown) => taskView(parseTaskRecord({ ...base, pending: JSON.stringify(pending) })!);
    expect(waiting({ kind: 'question', callId: 'q', protocol: 'fences', question: 'Why?' }).waitingFor).toEqual({
      kind: 'answer',
      question: 'Why?',
    });
    expect(
      waiting({
        kind: 'approval',
        step: 1,
        calls: [{ id: 'c', name: 'bash', arguments: '{}', rule: 'every bash call' }],
      }).waitingFor,
    ).toEqual({
      kind: 'approval',
      calls: [{ id: 'c', name: 'bash', arguments: '{}', rule: 'every bash call', decision: null }],
      expiresAt: null,
    });
    const children = waiting({ kind: 'children', callId: 'd', protocol: 'native', children: ['a.c1.1', 'a.c1.2'] });
    expect(children.waitingFor).toEqual({
      kind: 'children',
      children: ['a.c1.1', 'a.c1.2'],
      running: ['a.c1.1', 'a.c1.2'],
    });
    expect(children.question).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { TREE_TASK_LIMIT, TreeCursorError, treeCursorOf, treeCursorText } from './tree-stream.js';

const root = '01f6dd9a-1890-458d-a3e8-10066049cecf';

describe("a tree's cursor", () => {
  it('names each task by its id without the followed one, and reads back as it was written', () => {
    const seqs = new Map([
      [root, 12],
      [`${root}.c3.1`, 5],
      [`${root}.c3.1.c2.1`, 7],
      [`${root}.v1.s2`, 3],
      [`${root}.c3.2`, 0],
    ]);
    const text = treeCursorText(root, seqs);
    // A task at 0 is left out: it is read from its start either way.
    expect(text).toBe('12,c3.1:5,c3.1.c2.1:7,v1.s2:3');
    expect(treeCursorOf(root, text)).toEqual(new Map([...seqs].filter(([, seq]) => seq > 0)));
  });

  it("is a plain stream's cursor when it names only the task", () => {
    expect(treeCursorOf(root, '42')).toEqual(new Map([[root, 42]]));
    expect(treeCursorText(root, [[root, 42]])).toBe('42');
  });

  it.each([
    ['', 'must start with a seq'],
    ['x,c1.1:1', 'must start with a seq'],
    ['1,c1.1', 'each descendant is'],
    [`1,${root}.c1.1:1`, 'each descendant is'],
    ['1,c1.1:2,c1.1:3', 'names c1.1 twice'],
    [`1${',c1.1:1'.repeat(TREE_TASK_LIMIT)}`, 'names 500 descendants'],
  ])('refuses %j', (text, message) => {
    expect(() => treeCursorOf(root, text)).toThrow(TreeCursorError);
    expect(() => treeCursorOf(root, text)).toThrow(message);
  });
});

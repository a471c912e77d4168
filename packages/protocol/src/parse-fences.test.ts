import { describe, expect, it } from 'vitest';
import { parseFences } from './parse-fences.js';
import { splitReasoning } from './split-reasoning.js';

const TAGS = new Map([
  ['bash', 'bash'],
  ['sh', 'bash'],
  ['shell', 'bash'],
  ['python', 'python'],
  ['py', 'python'],
  ['python3', 'python'],
  ['node', 'node'],
  ['js', 'node'],
  ['c', 'c'],
  ['java', 'java'],
]);

describe('parseFences', () => {
  it('finds blocks in order with their tools', () => {
    const text = 'First:\n```bash\nls -la\n```\nthen\n```python\nprint("hi")\n```\n';
    expect(parseFences(text, TAGS).blocks).toEqual([
      { tag: 'bash', toolName: 'bash', code: 'ls -la', line: 2 },
      { tag: 'python', toolName: 'python', code: 'print("hi")', line: 6 },
    ]);
  });

  it('matches the tag exactly and case-insensitively: javascript is not java, cpp is not c', () => {
    const text =
      '```javascript\nconsole.log(1)\n```\n```cpp\nint main(){}\n```\n```PY\nprint(1)\n```\n```Python3\nprint(2)\n```';
    expect(parseFences(text, TAGS).blocks.map((block) => [block.tag, block.toolName])).toEqual([
      ['py', 'python'],
      ['python3', 'python'],
    ]);
  });

  it('takes the save path from the fence line only, and each block keeps its own', () => {
    const text =
      '```python:hello.py\nd = {"a": 1}\nfor k in d: print(k)\n```\n```python:src/other.py\nprint("other")\n```\n```python\nsave_path: not_a_path.py\n```';
    const { blocks } = parseFences(text, TAGS);
    expect(blocks.map((block) => block.savePath)).toEqual(['hello.py', 'src/other.py', undefined]);
    expect(blocks[0]!.code).toBe('d = {"a": 1}\nfor k in d: print(k)');
    expect(blocks[2]!.code).toBe('save_path: not_a_path.py');
  });

  it("de-indents by the opening fence's own indentation (blocks nested in lists run)", () => {
    const text = '1. Run this:\n\n    ```python\n    for i in range(2):\n        print(i)\n    ```\n';
    expect(parseFences(text, TAGS).blocks[0]!.code).toBe('for i in range(2):\n    print(i)');
  });

  it('lets a longer outer fence contain shorter ones, which are prose', () => {
    const text = '````markdown\nExample:\n```bash\nrm -rf /\n```\n````\n~~~sh\necho real\n~~~';
    expect(parseFences(text, TAGS).blocks).toEqual([{ tag: 'sh', toolName: 'bash', code: 'echo real', line: 7 }]);
  });

  it('closes only on a line of the same character, at least as long, with nothing after it', () => {
    const text = '````python\nprint("```")\n```not a close\n```\n````';
    expect(parseFences(text, TAGS).blocks[0]!.code).toBe('print("```")\n```not a close\n```');
  });

  it('reports an unclosed runnable fence and never runs it', () => {
    const text = '```bash\necho ok\n```\n```python\nprint("cut off")';
    expect(parseFences(text, TAGS)).toEqual({
      blocks: [{ tag: 'bash', toolName: 'bash', code: 'echo ok', line: 1 }],
      unclosed: [{ tag: 'python', line: 4 }],
    });
  });

  it('ignores fences with other tags or none', () => {
    expect(parseFences('```\nls\n```\n```json\n{}\n```\n```text\nhello\n```', TAGS).blocks).toEqual([]);
  });
});

describe('splitReasoning', () => {
  it('cuts <think> out of the answer and keeps it as reasoning', () => {
    expect(splitReasoning('<think>2+2... is 4</think>\nThe answer is 4.')).toEqual({
      answer: 'The answer is 4.',
      reasoning: '2+2... is 4',
    });
  });

  it('treats everything after an unclosed <think> as reasoning', () => {
    expect(splitReasoning('Start.<think>maybe\n```bash\nrm x\n```')).toEqual({
      answer: 'Start.',
      reasoning: 'maybe\n```bash\nrm x\n```',
    });
  });

  it('handles several think blocks and a closing tag whose opening was dropped', () => {
    expect(splitReasoning('plan A</think>Answer <think>more</think>done')).toEqual({
      answer: 'Answer done',
      reasoning: 'plan A\n\nmore',
    });
  });

  it('leaves text without reasoning alone', () => {
    expect(splitReasoning('  plain  ')).toEqual({ answer: 'plain', reasoning: '' });
  });
});

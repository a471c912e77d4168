import { countTokens } from 'gpt-tokenizer';
import { expect, it } from 'vitest';
import { cpuTimeOf } from '../../../tests/helpers/cpu-time.js';
import { countBounded, countMessageTokens } from './count-tokens.js';

it('counts ordinary text as the tokenizer counts it whole', () => {
  const text = [
    'Write fizzbuzz.py, run it, and say what it printed.',
    '```python\nfor i in range(1, 16):\n    print("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else i)\n```',
    'See https://docs.python.org/3/tutorial/controlflow.html#for-statements for more.',
  ].join('\n\n');
  expect(countBounded(countTokens, text)).toBe(countTokens(text));
});

it('counts a long run a little above the tokenizer, never below it', () => {
  for (const text of [' '.repeat(5_000), 'a'.repeat(5_000), `${'Zm9vYmFy'.repeat(800)} and some words after`]) {
    const whole = countTokens(text);
    expect(countBounded(countTokens, text)).toBeGreaterThanOrEqual(whole);
    expect(countBounded(countTokens, text)).toBeLessThanOrEqual(whole * 3 + 60);
  }
});

it('counts a message of 300,000 blanks or letters at once: a model cannot hold the worker with it', async () => {
  // The tokenizer's work grows with the square of a run: whole, these took minutes. Bounded, well under
  // a second of CPU (the bound leaves room for a loaded machine, whose clock time it is not).
  let tokens = 0;
  const cpuMs = await cpuTimeOf(async () => {
    tokens = await countMessageTokens([
      { role: 'assistant', content: ' '.repeat(300_000) },
      { role: 'tool', toolCallId: 'c', name: 'bash', content: `${'a'.repeat(300_000)}\n` },
    ]);
  });
  expect(tokens).toBeGreaterThan(0);
  expect(cpuMs).toBeLessThan(5_000);
});

it('counts a 30 MiB run of one letter (a regular expression over it overflowed the stack)', () => {
  const counted: string[] = [];
  const tokens = countBounded((text) => (counted.push(text), text.length), 'x'.repeat(30 * 1024 * 1024));
  expect(tokens).toBe(30 * 1024 * 1024);
  expect(Math.max(...counted.slice(0, 1000).map((text) => text.length))).toBeLessThanOrEqual(100);
});

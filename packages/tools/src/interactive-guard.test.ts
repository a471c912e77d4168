import { describe, expect, it } from 'vitest';
import { refuseInteractive } from './interactive-guard.js';
import { cpuTimeOf } from '../../../tests/helpers/cpu-time.js';

describe('refuseInteractive', () => {
  it.each([
    ['python', 'x = input("x? ")'],
    ['python', 'import curses\ncurses.wrapper(main)'],
    ['python', 'from getpass import getpass\npw = getpass("pw")'],
    ['bash', 'read -p "name? " name'],
    ['bash', 'echo start; read answer'],
    ['bash', 'if true; then read x; fi'],
    ['bash', 'vim notes.txt'],
    ['bash', 'git log | less'],
    ['bash', 'sudo nano /etc/hosts'],
    ['node', "const rl = require('readline').createInterface({ input: process.stdin })"],
    ['node', "import readline from 'node:readline/promises'"],
  ] as const)('refuses %s: %s', (language, code) => {
    expect(refuseInteractive({ language, code })).toMatch(
      /^Refused before running: the code uses .*Nothing can be typed in: put the values in variables in the code, and print results to stdout\.$/,
    );
  });

  it.each([
    ['python', 'obj.input()'],
    ['python', 'def input(prompt):\n    return "fixed"'],
    ['python', 'print("call input() to ask")'],
    ['python', '# input() would block here\nprint(1)'],
    ['python', 'text = """\ninput(\n"""'],
    ['python', 'user_input(3)'],
    ['bash', 'echo "read the docs, then vim"'],
    ['bash', "grep -r 'less than' ."],
    ['bash', 'cat README.md # less is more'],
    ['bash', 'git log --oneline | head -5'],
    ['bash', 'python3 reader.py'],
    ['node', "console.log('process.stdin is not used')"],
    ['node', '// readline is not required here\nconsole.log(1)'],
  ] as const)('runs %s: %s', (language, code) => {
    expect(refuseInteractive({ language, code })).toBeUndefined();
  });

  it.each(['python', 'bash', 'node'] as const)(
    'reads %s code of 200,000 blank lines at once: a model cannot hold the worker with it',
    async (language) => {
      // Each pattern's work grew with the square of a run of blank lines: this took over a minute. Now
      // well under a second of CPU (the bound leaves room for a loaded machine, whose clock time it is not).
      const cpuMs = await cpuTimeOf(() => {
        expect(
          refuseInteractive({ language, code: `x=1${'\n'.repeat(200_000)}${'\n \t'.repeat(50_000)}echo done` }),
        ).toBeUndefined();
        expect(
          refuseInteractive({
            language,
            code: `${'\n'.repeat(200_000)}${language === 'python' ? 'import curses' : language === 'bash' ? 'read x' : 'process.stdin'}`,
          }),
        ).toBeDefined();
      });
      expect(cpuMs).toBeLessThan(5_000);
    },
  );
});

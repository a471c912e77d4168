/**
 * Refuses, before it runs, code that would wait on a terminal: tools run headless, so such code
 * would only hang until its timeout or die on end-of-file. The refusal says what to do instead
 * (AgenticSeek's best idea: an error that is a fix instruction). Strings and comments are blanked
 * first, so `print("input(")`, `obj.input()` and `def input(...)` are not refused.
 */

export type GuardedLanguage = 'python' | 'bash' | 'node';

const FIX = 'Nothing can be typed in: put the values in variables in the code, and print results to stdout.';

export function refuseInteractive(options: { language: GuardedLanguage; code: string }): string | undefined {
  const bare = blankStringsAndComments(options.code, options.language, 'blank');
  const withStrings = blankStringsAndComments(options.code, options.language, 'keep');
  // Module names are strings: those patterns look at the code with its strings kept.
  const found = PATTERNS[options.language].find(([pattern, , needsStrings]) =>
    pattern.test(needsStrings ? withStrings : bare),
  );
  if (!found) return undefined;
  return `Refused before running: the code uses ${found[1]}, which waits for a terminal, but tools run without one. ${FIX}`;
}

/**
 * Where a bash command starts, then the blanks before its name. Blanks on the same line only (`[ \t]`,
 * not `\s`): a line break is itself a start, and a `\s*` from every start of a run of blank lines read
 * the whole run again each time (40,000 line breaks held the worker 3.5 s, quadratically more after).
 */
const BASH_COMMAND_START = String.raw`(?:^|[;&|(\n]|\$\(|\b(?:then|do|else)\s)[ \t]*(?:sudo[ \t]+)?`;

const PATTERNS: Record<GuardedLanguage, Array<[RegExp, string, boolean?]>> = {
  python: [
    [/(?<![\w.])(?<!def\s+)input\s*\(/, 'input()'],
    [/^[ \t]*(?:import|from)[ \t]+[^\n]*\bcurses\b/m, 'curses'],
    [/(?<![\w.])getpass\s*[.(]/, 'getpass'],
  ],
  bash: [
    [new RegExp(`${BASH_COMMAND_START}read(?:\\s|$)`, 'm'), '`read` (keyboard input)'],
    [
      new RegExp(`${BASH_COMMAND_START}(?:vi|vim|nvim|nano|emacs|pico|ed)(?:\\s|$)`, 'm'),
      'an interactive editor (write files with write_file, or `cat > file <<EOF`)',
    ],
    [
      new RegExp(`${BASH_COMMAND_START}(?:less|more|most|man|top|htop)(?:\\s|$)`, 'm'),
      'a pager or full-screen program (print with cat, head or tail)',
    ],
  ],
  node: [
    [/\b(?:require\s*\(\s*|from\s+|import\s*\(\s*)['"`](?:node:)?readline(?:\/promises)?['"`]/, 'readline', true],
    [/\bprocess\.stdin\b/, 'process.stdin'],
    [/(?<![\w.])prompt\s*\(/, 'prompt()'],
  ],
};

/** Replaces the contents of comments (and of string literals, unless kept) with spaces. */
function blankStringsAndComments(code: string, language: GuardedLanguage, strings: 'blank' | 'keep'): string {
  const out: string[] = [];
  let index = 0;
  const blank = (text: string) => text.replace(/[^\n]/g, ' ');
  while (index < code.length) {
    const char = code[index]!;
    const rest = code.slice(index);
    const lineComment =
      language === 'node'
        ? rest.startsWith('//')
        : char === '#' && (language === 'python' || index === 0 || /\s/.test(code[index - 1]!));
    if (lineComment) {
      const end = code.indexOf('\n', index);
      const stop = end === -1 ? code.length : end;
      out.push(blank(code.slice(index, stop)));
      index = stop;
      continue;
    }
    if (language === 'node' && rest.startsWith('/*')) {
      const end = code.indexOf('*/', index + 2);
      const stop = end === -1 ? code.length : end + 2;
      out.push(blank(code.slice(index, stop)));
      index = stop;
      continue;
    }
    const quote = quoteAt(rest, language);
    if (quote) {
      const bodyStart = index + quote.length;
      // Backslash escapes the next character, except inside single quotes in bash.
      const escapes = language !== 'bash' || quote === '"';
      let end = bodyStart;
      while (end < code.length && !code.startsWith(quote, end)) end += escapes && code[end] === '\\' ? 2 : 1;
      const body = code.slice(bodyStart, Math.min(end, code.length));
      out.push(quote, strings === 'blank' ? blank(body) : body);
      if (end < code.length) out.push(quote);
      index = Math.min(code.length, end + quote.length);
      continue;
    }
    out.push(char);
    index++;
  }
  return out.join('');
}

function quoteAt(rest: string, language: GuardedLanguage): string | undefined {
  if (language === 'python' && (rest.startsWith('"""') || rest.startsWith("'''"))) return rest.slice(0, 3);
  const char = rest[0];
  if (char === '"' || char === "'" || (language === 'node' && char === '`')) return char;
  return undefined;
}

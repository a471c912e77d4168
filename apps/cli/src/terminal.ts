/** Writing to a terminal: colour only on a TTY, and a line that redraws in place. */
import { terminalSafe } from '@agentq/telemetry/terminal-safe';

// Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org).
// eslint-disable-next-line no-restricted-properties -- read before any config: how to write, not what to do
const tty = process.stdout.isTTY === true && !process.env.NO_COLOR;

export const paint = {
  dim: (text: string) => (tty ? `\x1b[2m${text}\x1b[0m` : text),
  bold: (text: string) => (tty ? `\x1b[1m${text}\x1b[0m` : text),
  green: (text: string) => (tty ? `\x1b[32m${text}\x1b[0m` : text),
  red: (text: string) => (tty ? `\x1b[31m${text}\x1b[0m` : text),
  yellow: (text: string) => (tty ? `\x1b[33m${text}\x1b[0m` : text),
  cyan: (text: string) => (tty ? `\x1b[36m${text}\x1b[0m` : text),
};

/** Rows under a bold header, each column as wide as its widest cell, two spaces between. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const format = (row: readonly string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return `${paint.bold(format(header))}\n${rows.map(format).join('\n')}\n`;
}

/** On a TTY the line is redrawn in place; elsewhere (a log, a pipe) it is printed when it changes. */
export function statusLine(): { update(text: string): void; done(): void } {
  let last = '';
  return {
    update(text) {
      if (text === last) return;
      last = text;
      if (tty) process.stdout.write(`\r\x1b[2K${text}`);
      else process.stdout.write(`${text}\n`);
    },
    done() {
      if (tty && last) process.stdout.write('\n');
    },
  };
}

/** The first lines of a long text, and how much was left out. */
export function foldText(text: string, lines = 6): string {
  const all = text.split('\n');
  if (all.length <= lines) return text;
  return `${all.slice(0, lines).join('\n')}\n${paint.dim(`… ${all.length - lines} more lines`)}`;
}

/** A text on one line of a table or a log: every run of white space (new lines too) one space, cut at `length`. */
export function oneLine(text: string, length: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

export function indent(text: string, prefix = '    '): string {
  return text
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

/** Every string in `value` (an event, a task) made inert for a terminal (`terminalSafe`). */
export function terminalSafeDeep<T>(value: T): T {
  if (typeof value === 'string') return terminalSafe(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => terminalSafeDeep(item)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, terminalSafeDeep(item)])) as T;
  return value;
}

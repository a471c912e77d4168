/**
 * Text a task or its model wrote, made inert for a terminal: a control character could move the cursor
 * over earlier lines, retitle the window, or write the clipboard (OSC 52); a bidirectional override could
 * reorder what follows it. Each shows as its escape instead (`\u001b`).
 */

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Tabs and line breaks stay (a CRLF is a line break, a lone CR is shown). */
export function terminalSafe(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE, escaped);
}

/**
 * A JSON line whose strings, once parsed and printed, show such characters as their escapes: JSON
 * escapes C0 controls itself, but leaves DEL, C1 controls and the bidi characters as they are, and
 * these can only stand inside a string, where `\\u…` is the text of their escape.
 */
export function terminalSafeJson(line: string): string {
  return line.replace(UNSAFE, (char) => `\\${escaped(char)}`);
}

/**
 * Token counts of messages with a real tokenizer that works offline (o200k_base), loaded the first
 * time a count is needed: a context is first measured by a bound that needs no tokenizer (a token is
 * at least one UTF-8 byte, a UTF-16 unit at most three bytes), and most contexts are well under the
 * limit by that bound alone. The tokenizer holds tens of MB and takes a while to load.
 */
import type { Message } from '@agentq/protocol';

/** Per-message overhead of the chat format (role, separators), as providers count it roughly. */
const MESSAGE_OVERHEAD = 4;

/** Stored messages never change, and the context is counted before every model call: count each once. */
const counted = new WeakMap<Message, number>();

let tokenizer: Promise<(text: string) => number> | undefined;

/** At least as many tokens as the messages hold, without a tokenizer. */
export function tokenUpperBound(messages: readonly Message[]): number {
  let total = 0;
  for (const message of messages) {
    total += MESSAGE_OVERHEAD + 3 * (message.content?.length ?? 0);
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? []) total += 3 * (call.name.length + call.arguments.length);
  }
  return total;
}

/** Loads the tokenizer now, for a process that counts every call (shared rate limits): no call waits for it. */
export function loadTokenizer(): Promise<(text: string) => number> {
  return (tokenizer ??= import('gpt-tokenizer').then((module) => module.countTokens));
}

export async function countMessageTokens(messages: readonly Message[]): Promise<number> {
  const countTokens = await loadTokenizer();
  const count = (text: string) => countBounded(countTokens, text);
  let total = 0;
  for (const message of messages) {
    let tokens = counted.get(message);
    if (tokens === undefined) {
      tokens = MESSAGE_OVERHEAD + count(message.content ?? '');
      if (message.role === 'assistant') {
        for (const call of message.toolCalls ?? []) tokens += count(call.name) + count(call.arguments);
      }
      counted.set(message, tokens);
    }
    total += tokens;
  }
  return total;
}

/**
 * The longest run of blanks, or of anything else, the tokenizer is given whole. Its merges cost the
 * square of a run's length: 100,000 spaces (under 800 tokens for a model to write) held the worker's
 * event loop 11 s, a million would hold it for half an hour.
 */
const MAX_RUN = 100;

/** A blank as `\s` matches it (the tokenizer splits on the same). */
function isBlank(code: number): boolean {
  return (
    code === 32 ||
    (code >= 9 && code <= 13) ||
    code === 160 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * `text`'s tokens, its long runs counted MAX_RUN characters at a time: a cut changes only the merges
 * next to it (about a token more per cut), and text without such runs counts the same as whole. The
 * runs are found by a plain scan: a regular expression over a 30 MiB run overflowed the stack
 * ("Maximum call stack size exceeded", and the task failed).
 */
export function countBounded(countTokens: (text: string) => number, text: string): number {
  if (text.length <= MAX_RUN) return countTokens(text);
  let total = 0;
  let from = 0;
  let start = 0;
  while (start < text.length) {
    const blank = isBlank(text.charCodeAt(start));
    let end = start + 1;
    while (end < text.length && isBlank(text.charCodeAt(end)) === blank) end++;
    if (end - start > MAX_RUN) {
      // What comes before the run goes with the run's first part, so that the tokens across them stay whole.
      let cut = start + MAX_RUN;
      total += countTokens(text.slice(from, cut));
      for (; cut < end; cut += MAX_RUN) total += countTokens(text.slice(cut, Math.min(cut + MAX_RUN, end)));
      from = end;
    }
    start = end;
  }
  return total + countTokens(text.slice(from));
}

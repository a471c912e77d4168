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
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) total += 3 * (call.name.length + call.arguments.length);
  }
  return total;
}

/** Loads the tokenizer now, for a process that counts every call (shared rate limits): no call waits for it. */
export function loadTokenizer(): Promise<(text: string) => number> {
  return (tokenizer ??= import('gpt-tokenizer').then((module) => module.countTokens));
}

export async function countMessageTokens(messages: readonly Message[]): Promise<number> {
  const countTokens = await loadTokenizer();
  let total = 0;
  for (const message of messages) {
    let tokens = counted.get(message);
    if (tokens === undefined) {
      tokens = MESSAGE_OVERHEAD + countTokens(message.content ?? '');
      if (message.role === 'assistant') {
        for (const call of message.toolCalls ?? []) tokens += countTokens(call.name) + countTokens(call.arguments);
      }
      counted.set(message, tokens);
    }
    total += tokens;
  }
  return total;
}

/** Token counts of messages with a real tokenizer that works offline (o200k_base). */
import { countTokens } from 'gpt-tokenizer';
import type { Message } from '@agentq/protocol';

/** Per-message overhead of the chat format (role, separators), as providers count it roughly. */
const MESSAGE_OVERHEAD = 4;

/** Stored messages never change, and the context is counted before every model call: count each once. */
const counted = new WeakMap<Message, number>();

export function countMessageTokens(messages: readonly Message[]): number {
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

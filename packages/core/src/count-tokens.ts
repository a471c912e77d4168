/** Token counts of messages with a real tokenizer that works offline (o200k_base). */
import { countTokens } from 'gpt-tokenizer';
import type { Message } from '@agentq/protocol';

/** Per-message overhead of the chat format (role, separators), as providers count it roughly. */
const MESSAGE_OVERHEAD = 4;

export function countMessageTokens(messages: readonly Message[]): number {
  let total = 0;
  for (const message of messages) {
    total += MESSAGE_OVERHEAD + countTokens(message.content ?? '');
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) total += countTokens(call.name) + countTokens(call.arguments);
    }
  }
  return total;
}

/**
 * Makes a stored conversation safe to send to a model (learn-claude-code's normalize_messages):
 * - internal fields (`_name`) are dropped;
 * - every tool call gets a result: a call left without one (a crash or a cancel mid-step) gets
 *   "(cancelled)", because providers reject a tool call with no answer;
 * - consecutive messages of the same role merge (user+user, system+system), as bare chat
 *   endpoints of small models reject or garble them. Assistant and tool messages are not merged:
 *   each tool result must stay its own message, linked to its call.
 */
import type { AssistantMessage, Message, ToolMessage } from './messages.js';

export const CANCELLED_RESULT = '(cancelled)';

export function normalizeMessages(messages: readonly Message[]): Message[] {
  const withResults = fillMissingToolResults(messages.map(dropInternalFields));
  const merged: Message[] = [];
  for (const message of withResults) {
    const previous = merged.at(-1);
    if (previous && (message.role === 'user' || message.role === 'system') && previous.role === message.role) {
      merged[merged.length - 1] = { role: message.role, content: `${previous.content}\n\n${message.content}` };
    } else {
      merged.push(message);
    }
  }
  return merged;
}

function dropInternalFields(message: Message): Message {
  return Object.fromEntries(Object.entries(message).filter(([key]) => !key.startsWith('_'))) as unknown as Message;
}

function fillMissingToolResults(messages: readonly Message[]): Message[] {
  const answered = new Set(
    messages.filter((message): message is ToolMessage => message.role === 'tool').map((message) => message.toolCallId),
  );
  const result: Message[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    result.push(message);
    if (message.role !== 'assistant' || !message.toolCalls?.length) continue;
    // Keep the results that follow this call; add the missing ones right after them.
    while (messages[index + 1]?.role === 'tool') result.push(messages[++index]!);
    for (const call of (message as AssistantMessage).toolCalls ?? []) {
      if (!answered.has(call.id)) {
        result.push({ role: 'tool', toolCallId: call.id, name: call.name, content: CANCELLED_RESULT });
      }
    }
  }
  return result;
}

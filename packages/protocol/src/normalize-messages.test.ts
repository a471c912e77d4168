import { describe, expect, it } from 'vitest';
import type { Message } from './messages.js';
import { CANCELLED_RESULT, normalizeMessages } from './normalize-messages.js';

describe('normalizeMessages', () => {
  it('drops internal fields', () => {
    const messages: Message[] = [
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'bash', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', name: 'bash', content: 'boom', _isError: true },
    ];
    expect(normalizeMessages(messages)[1]).toEqual({ role: 'tool', toolCallId: 'c1', name: 'bash', content: 'boom' });
  });

  it('adds a (cancelled) result right after the results of a call that has none', () => {
    const messages: Message[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 'bash', arguments: '{}' },
          { id: 'c2', name: 'bash', arguments: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'c1', name: 'bash', content: 'one' },
      { role: 'user', content: 'and then?' },
    ];
    expect(
      normalizeMessages(messages).map((message) =>
        message.role === 'tool' ? `${message.toolCallId}:${message.content}` : message.role,
      ),
    ).toEqual(['user', 'assistant', 'c1:one', `c2:${CANCELLED_RESULT}`, 'user']);
  });

  it('merges consecutive user messages but never tool messages', () => {
    const messages: Message[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    expect(normalizeMessages(messages)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'a\n\nb' },
    ]);
  });
});

/** Native OpenAI tool calls: each result is a `tool` message linked by its `tool_call_id`. */
import type { Message } from '@agentq/protocol';
import { toolSchema } from '@agentq/tools';
import type { CallResult, ToolProtocol } from './tool-protocol.js';

export const nativeProtocol: ToolProtocol = {
  name: 'native',
  stopsAtFirstFailure: false,
  toolSpecs: (tools) => tools.map(toolSchema),
  plan(message) {
    if (message.toolCalls?.length) return { kind: 'tools', calls: message.toolCalls.map((call) => ({ ...call })) };
    return { kind: 'final', answer: message.content ?? '' };
  },
  messageForResult: (result: CallResult) => ({
    role: 'tool',
    toolCallId: result.call.id,
    name: result.call.name,
    content: result.output,
    ...(result.status === 'ok' ? {} : { _isError: true }),
  }),
  messagesForStep: () => [],
  replyMessage: (text) => ({ role: 'user', content: text, _feedback: true }),
  pendingCalls(calls, after: readonly Message[]) {
    const answered = new Set(after.flatMap((entry) => (entry.role === 'tool' ? [entry.toolCallId] : [])));
    return calls.filter((call) => !answered.has(call.id));
  },
};

/**
 * One model call: normalise the messages, ask the model, and commit its answer (with usage and
 * events) before anything acts on it.
 */
import type { LanguageModel, ModelResponse, ToolSpec } from '@agentq/llm';
import { normalizeMessages, type Message } from '@agentq/protocol';
import type { AgentEventInput } from './agent-events.js';
import type { AgentJournal } from './journal.js';

export interface CallModelOptions {
  model: LanguageModel;
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  journal: AgentJournal;
  /** The number of this step (1-based). */
  step: number;
  signal: AbortSignal;
}

export async function callModel(options: CallModelOptions): Promise<ModelResponse> {
  const { model, journal, step } = options;
  const messages = normalizeMessages(options.messages);
  await journal.commit({
    events: [{ type: 'llm.request', step, data: { model: model.modelId, messages: messages.length, tools: options.tools.length } }],
  });
  const started = performance.now();
  const response = await model.generate({ messages, tools: options.tools, signal: options.signal });
  const events: AgentEventInput[] = [];
  if (response.reasoning) events.push({ type: 'reasoning', step, data: { text: response.reasoning } });
  events.push({
    type: 'llm.response',
    step,
    data: {
      content: response.message.content,
      toolCalls: response.message.toolCalls ?? [],
      usage: response.usage ?? null,
      finishReason: response.finishReason ?? null,
      durationMs: Math.round(performance.now() - started),
    },
  });
  // A final answer completes its step in the same commit.
  const final = !response.message.toolCalls?.length;
  if (final) events.push({ type: 'step.completed', step, data: { step } });
  await journal.commit({
    messages: [response.message],
    events,
    ...(response.usage ? { usage: response.usage } : {}),
    ...(final ? { steps: step } : {}),
  });
  return response;
}

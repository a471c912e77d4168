/**
 * One model turn: normalise the context, ask the model, cut its reasoning out of the answer, give its
 * calls ids of their own, decide what the answer asks for (through the tool protocol), and commit the
 * answer with its usage and events before anything acts on it. A final answer completes its step in
 * the same commit.
 */
import { eventText, keptArguments, keptText } from './event-text.js';
import type { LanguageModel, ModelDelta, ToolSpec } from '@agentq/llm';
import {
  normalizeMessages,
  splitReasoning,
  type AssistantMessage,
  type Message,
  type TokenUsage,
} from '@agentq/protocol';
import type { Tool } from '@agentq/tools';
import type { EventInput } from '@agentq/contract';
import { ANNOUNCE_WITHIN_MS, type AgentJournal } from './journal.js';
import type { ToolProtocol, TurnPlan } from './tool-protocol.js';
import { uniqueCallIds } from './unique-call-ids.js';

/** The agent loop's turns: a reply goes back to the model, and an answer that asks for no tool ends the step. */
function defaultCompletion(protocol: ToolProtocol): NonNullable<ModelTurnOptions['completeWith']> {
  return (plan) => ({
    messages: plan.kind === 'reply' ? [protocol.replyMessage(plan.text)] : [],
    completesStep: plan.kind !== 'tools',
  });
}

export interface ModelTurnOptions {
  model: LanguageModel;
  context: readonly Message[];
  protocol: ToolProtocol;
  tools: readonly Tool[];
  toolSpecs: readonly ToolSpec[];
  journal: AgentJournal;
  /** The number of this step (1-based). */
  step: number;
  signal: AbortSignal;
  /**
   * What the answer's own commit adds, once it is known what the answer asks for: messages that
   * answer it, events, and whether the step completes with it. Default: a reply's message, and an
   * answer that asks for no tool completes its step.
   */
  completeWith?: (plan: TurnPlan, answer: AssistantMessage) => TurnCompletion;
  /**
   * A final answer is the run's last write before its outcome: commit it lazily, to go out with the
   * outcome (a crash in between asks the model again). Default false.
   */
  holdFinalAnswer?: boolean;
  /**
   * An answer that asks for tools is written with its first call's announcement (`tool.call`), which
   * executeTools writes before the call runs (`answerHeld`): one write, not two when the tool runs long
   * enough to be announced by itself. Default false.
   */
  holdToolsAnswer?: boolean;
  /** Each piece of the answer as it forms, with this step's number: the model is asked for a stream. */
  onDelta?: (delta: ModelDelta, step: number) => void;
}

/** What a turn's commit adds to the answer (see `completeWith`). */
export interface TurnCompletion {
  messages?: Message[];
  events?: EventInput[];
  completesStep: boolean;
  /** More for the `step.completed` event (why a plan was not accepted). */
  stepData?: { planErrors?: string[] };
}

export interface ModelTurn {
  plan: TurnPlan;
  /** What was appended to memory: the answer, and a reply to it when the plan has one. */
  committed: Message[];
  usage: TokenUsage | undefined;
}

export async function takeModelTurn(options: ModelTurnOptions): Promise<ModelTurn> {
  const { model, journal, step } = options;
  const messages = normalizeMessages(options.context);
  // For those who watch: written with the answer, or by itself if the call takes long enough to see.
  await journal.commit({
    events: [
      {
        type: 'llm.request',
        step,
        data: { model: model.modelId, messages: messages.length, tools: options.toolSpecs.length },
      },
    ],
    lazy: true,
    writeWithinMs: ANNOUNCE_WITHIN_MS,
  });
  const started = performance.now();
  const { onDelta } = options;
  const response = await model.generate({
    messages,
    tools: options.toolSpecs,
    signal: options.signal,
    ...(onDelta ? { onDelta: (delta: ModelDelta) => onDelta(delta, step) } : {}),
  });
  const durationMs = Math.round(performance.now() - started);

  // <think> never enters memory and is never run; it is kept as a reasoning event.
  const { answer, reasoning } = splitReasoning(response.message.content ?? '');
  const toolCalls = response.message.toolCalls;
  const message: AssistantMessage = {
    ...response.message,
    content: answer || (toolCalls?.length ? null : ''),
    // Stored with ids of their own: each result, approval and decision names one call.
    ...(toolCalls?.length ? { toolCalls: uniqueCallIds({ calls: toolCalls, step }) } : {}),
  };
  const plan = options.protocol.plan(message, { step, tools: options.tools });
  const reasoningText = [response.reasoning, reasoning].filter(Boolean).join('\n\n');

  const events: EventInput[] = [];
  if (reasoningText) events.push({ type: 'reasoning', step, data: keptText(reasoningText) });
  const content = message.content === null ? undefined : eventText(message.content);
  events.push({
    type: 'llm.response',
    step,
    data: {
      content: content ? content.text : null,
      ...(content?.length !== undefined ? { contentLength: content.length } : {}),
      toolCalls: (message.toolCalls ?? []).map((call) => ({ ...call, ...keptArguments(call.arguments) })),
      usage: response.usage ?? null,
      finishReason: response.finishReason ?? null,
      durationMs,
      ...(response.costUsd !== undefined ? { costUsd: response.costUsd } : {}),
    },
  });
  const completion = (options.completeWith ?? defaultCompletion(options.protocol))(plan, message);
  const committed: Message[] = [message, ...(completion.messages ?? [])];
  events.push(...(completion.events ?? []));
  const completes = completion.completesStep;
  if (completes) events.push({ type: 'step.completed', step, data: { step, ...completion.stepData } });
  await journal.commit({
    messages: committed,
    events,
    ...(response.usage ? { usage: response.usage } : {}),
    ...(completes ? { steps: step } : {}),
    ...((options.holdFinalAnswer && plan.kind === 'final') || (options.holdToolsAnswer && plan.kind === 'tools')
      ? { lazy: true }
      : {}),
  });
  return { plan, committed, usage: response.usage };
}

/**
 * The agent loop: model call -> tool calls -> tool results -> model call ... until the model answers
 * without a tool call, a stop condition ends it, or it is cancelled. It starts from whatever its
 * journal holds, so a job picked up again after a crash resumes at its last committed step.
 *
 *   load memory ─► [cancelled? stop?] ─► call model ─► commit answer ─► tool calls? ─no─► completed
 *                         ▲                                                 │yes
 *                         └──────────── commit each result ◄── run tools ◄──┘
 */
import { LlmError, type LanguageModel } from '@agentq/llm';
import type { AssistantMessage, Message } from '@agentq/protocol';
import { toolSchema, type Tool } from '@agentq/tools';
import type { AgentOutcome, TurnResult } from './agent-outcome.js';
import { callModel } from './call-model.js';
import { executeTools } from './execute-tools.js';
import type { AgentJournal } from './journal.js';
import { stepCountIs, type StopCondition } from './stop-conditions.js';

export interface RunAgentOptions {
  model: LanguageModel;
  tools: readonly Tool[];
  journal: AgentJournal;
  /** Used only when the journal is empty (a fresh task). */
  systemPrompt: string;
  prompt: string;
  /** The task's work directory: tools run there and cannot leave it. */
  workdir: string;
  /** Hard cap on model calls. */
  maxSteps: number;
  /** More stop conditions, checked with the step cap before every model call. Default none. */
  stopWhen?: StopCondition[];
  /** Per tool run. Default 60000 ms. */
  toolTimeoutMs?: number;
  /** Characters of tool output kept for the model. Default 20000. */
  toolOutputLimit?: number;
  /** Cancels the run: aborts the model request and kills the running tool. */
  signal: AbortSignal;
}

export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const { journal, signal } = options;
  const messages = await journal.load();
  if (messages.length === 0) {
    const initial: Message[] = [
      { role: 'system', content: options.systemPrompt },
      { role: 'user', content: options.prompt },
    ];
    await journal.commit({ messages: initial });
    messages.push(...initial);
  }
  const stopConditions = [stepCountIs(options.maxSteps), ...(options.stopWhen ?? [])];
  const toolSpecs = options.tools.map(toolSchema);
  const toolContext = {
    workdir: options.workdir,
    signal,
    timeoutMs: options.toolTimeoutMs ?? 60_000,
    outputLimit: options.toolOutputLimit ?? 20_000,
  };
  let steps = messages.filter((message) => message.role === 'assistant').length;

  const finishTools = async (message: AssistantMessage): Promise<TurnResult> => {
    const answered = new Set(messages.flatMap((entry) => (entry.role === 'tool' ? [entry.toolCallId] : [])));
    const outcome = await executeTools({ message, answered, tools: options.tools, journal, context: toolContext, step: steps });
    messages.push(...outcome.results);
    return outcome.status === 'cancelled' ? { kind: 'cancelled' } : { kind: 'run_again' };
  };

  // Resuming: a last step whose tools did not all finish completes them before the next model call;
  // a last answer without tool calls is the final answer.
  const lastAssistant = messages.findLast((message): message is AssistantMessage => message.role === 'assistant');
  if (lastAssistant && !lastAssistant.toolCalls?.length) {
    return { status: 'completed', answer: lastAssistant.content ?? '', steps };
  }
  if (lastAssistant && (await finishTools(lastAssistant)).kind === 'cancelled') return { status: 'cancelled', steps };

  for (;;) {
    if (signal.aborted) return { status: 'cancelled', steps };
    const stop = stopConditions.map((condition) => condition({ steps })).find(Boolean);
    if (stop) return { status: 'failed', reason: stop.reason, message: stop.message, steps };

    let response;
    try {
      response = await callModel({ model: options.model, messages, tools: toolSpecs, journal, step: steps + 1, signal });
    } catch (error) {
      if (signal.aborted || (error instanceof LlmError && error.code === 'aborted')) return { status: 'cancelled', steps };
      // Retryable errors (the SDK already retried) go up so the job is tried again later.
      if (error instanceof LlmError && !error.retryable) return { status: 'failed', reason: 'error', message: error.message, steps };
      throw error;
    }
    steps++;
    messages.push(response.message);
    if (!response.message.toolCalls?.length) {
      return { status: 'completed', answer: response.message.content ?? '', steps };
    }
    if ((await finishTools(response.message)).kind === 'cancelled') return { status: 'cancelled', steps };
  }
}

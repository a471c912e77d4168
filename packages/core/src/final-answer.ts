/**
 * The last stage of a planned task: one model call that writes the final answer from the goal and
 * every subtask's result. No tools; the answer completes its step.
 */
import type { LanguageModel } from '@agentq/llm';
import type { Message } from '@agentq/protocol';
import { modelErrorOutcome } from './agent-outcome.js';
import { takeModelTurn } from './call-model.js';
import type { AgentJournal } from './journal.js';
import { nativeProtocol } from './native-protocol.js';

export type FinalAnswerOutcome =
  | { status: 'completed'; answer: string }
  | { status: 'cancelled' }
  | { status: 'failed'; reason: 'error'; message: string };

export async function writeFinalAnswer(options: {
  model: LanguageModel;
  journal: AgentJournal;
  systemPrompt: string;
  /** The goal and the results, as the model reads them. */
  results: string;
  signal: AbortSignal;
}): Promise<FinalAnswerOutcome> {
  const { journal, signal } = options;
  try {
    const entries = await journal.load();
    const results: Message = { role: 'user', content: options.results, _feedback: true };
    await journal.commit({ messages: [results] });
    const turn = await takeModelTurn({
      model: options.model,
      context: [{ role: 'system', content: options.systemPrompt }, results],
      protocol: nativeProtocol,
      tools: [],
      toolSpecs: [],
      journal,
      step: entries.filter((entry) => entry.role === 'assistant').length + 1,
      signal,
    });
    return {
      status: 'completed',
      answer: turn.plan.kind === 'final' ? turn.plan.answer : (turn.committed[0]?.content ?? ''),
    };
  } catch (error) {
    return modelErrorOutcome(error, signal);
  }
}

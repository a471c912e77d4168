/**
 * Stop conditions as small predicates over the run so far, checked before each model call. The
 * step cap is always there; budgets compose beside it.
 */
import type { TokenUsage } from '@agentq/protocol';
import type { FailureReason } from './agent-outcome.js';

export interface RunState {
  /** Completed model calls of the task, across every attempt. */
  steps: number;
  /** Tokens the provider reported for the task so far. */
  usage: TokenUsage;
  /** Since the task first started. */
  elapsedMs: number;
  /** The tokens of the next call's prompt, counted before it is sent (for conditions that ask: `countsNextPrompt`). */
  nextPromptTokens?: number;
}

export type StopCondition = ((state: RunState) => { reason: FailureReason; message: string } | undefined) & {
  /** It reads `nextPromptTokens`, which is then counted before each call. */
  countsNextPrompt?: boolean;
};

export function stepCountIs(maxSteps: number): StopCondition {
  return (state) =>
    state.steps >= maxSteps
      ? {
          reason: 'max_steps',
          message: `Stopped after ${maxSteps} steps without a final answer (max steps ${maxSteps}).`,
        }
      : undefined;
}

/**
 * Total tokens (prompt + completion) the task may use: it stops once they are used, and before a call
 * whose prompt alone would pass them (a 3,000-token budget ended at 4,438 when only what was used was
 * checked: the last call's prompt was the whole context).
 */
export function tokenBudgetIs(maxTokens: number): StopCondition {
  const condition: StopCondition = (state) => {
    const used = state.usage.promptTokens + state.usage.completionTokens;
    if (used >= maxTokens)
      return { reason: 'budget', message: `Stopped: the task used ${used} tokens of its budget of ${maxTokens}.` };
    const next = state.nextPromptTokens ?? 0;
    if (used + next > maxTokens) {
      return {
        reason: 'budget',
        message: `Stopped: the task used ${used} tokens of its budget of ${maxTokens}, and its next call's prompt alone holds ${next} more.`,
      };
    }
    return undefined;
  };
  condition.countsNextPrompt = true;
  return condition;
}

/** Wall-clock time the task may take from its first start. */
export function timeBudgetIs(maxMs: number): StopCondition {
  return (state) =>
    state.elapsedMs >= maxMs
      ? {
          reason: 'budget',
          message: `Stopped: the task ran ${Math.round(state.elapsedMs / 1000)} s, past its time budget of ${Math.round(maxMs / 1000)} s.`,
        }
      : undefined;
}

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
}

export type StopCondition = (state: RunState) => { reason: FailureReason; message: string } | undefined;

export function stepCountIs(maxSteps: number): StopCondition {
  return (state) =>
    state.steps >= maxSteps ? { reason: 'max_steps', message: `Stopped after ${maxSteps} steps without a final answer (max steps ${maxSteps}).` } : undefined;
}

/** Total tokens (prompt + completion) the task may use. */
export function tokenBudgetIs(maxTokens: number): StopCondition {
  return (state) => {
    const used = state.usage.promptTokens + state.usage.completionTokens;
    return used >= maxTokens ? { reason: 'budget', message: `Stopped: the task used ${used} tokens of its budget of ${maxTokens}.` } : undefined;
  };
}

/** Wall-clock time the task may take from its first start. */
export function timeBudgetIs(maxMs: number): StopCondition {
  return (state) =>
    state.elapsedMs >= maxMs ? { reason: 'budget', message: `Stopped: the task ran ${Math.round(state.elapsedMs / 1000)} s, past its time budget of ${Math.round(maxMs / 1000)} s.` } : undefined;
}

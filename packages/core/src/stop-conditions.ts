/**
 * Stop conditions as small predicates over the run so far, checked before each model call. The
 * step cap is always there; others (budgets) compose beside it.
 */

export interface RunState {
  steps: number;
}

export interface StopCondition {
  /** Returns the reason to stop, or undefined to go on. */
  (state: RunState): { reason: 'max_steps'; message: string } | undefined;
}

export function stepCountIs(maxSteps: number): StopCondition {
  return (state) =>
    state.steps >= maxSteps
      ? { reason: 'max_steps', message: `Stopped after ${maxSteps} steps without a final answer (max steps ${maxSteps}).` }
      : undefined;
}

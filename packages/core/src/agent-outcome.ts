/** How a run of the loop ended; the task's final status follows from it. */

export type FailureReason = 'max_steps' | 'error';

export type AgentOutcome =
  | { status: 'completed'; answer: string; steps: number }
  | { status: 'failed'; reason: FailureReason; message: string; steps: number }
  | { status: 'cancelled'; steps: number };

/** What one turn (a model call and its tools) decided. */
export type TurnResult = { kind: 'run_again' } | { kind: 'final_output'; answer: string } | { kind: 'cancelled' };

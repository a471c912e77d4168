/** How a run of the loop ended; the task's final status follows from it. */
import { LlmError } from '@agentq/llm';
import { RunLostError } from './journal.js';
import type { Interrupt } from './interrupts.js';

export type FailureReason = 'max_steps' | 'budget' | 'error';

export type AgentOutcome =
  | { status: 'completed'; answer: string; steps: number }
  | { status: 'failed'; reason: FailureReason; message: string; steps: number }
  | { status: 'cancelled'; steps: number }
  /** The run paused (interrupts.ts): the task waits, and resumes once the interrupt is satisfied. */
  | { status: 'interrupted'; interrupt: Interrupt; steps: number };

/**
 * What a model error means for a stage (the loop, planning, a final answer): the run was stopped
 * (`cancelled`), or the model refused in a way that trying again cannot fix (`failed`). A retryable
 * error (the SDK retried it already) is thrown again, for the job to be tried again later, and so is
 * a RunLostError (the journal refused a write: the task is no longer this run's).
 */
export function modelErrorOutcome(
  error: unknown,
  signal: AbortSignal,
): { status: 'cancelled' } | { status: 'failed'; reason: 'error'; message: string } {
  // A run that lost its task stops as such, whatever else happened: it has nothing to record.
  if (error instanceof RunLostError) throw error;
  if (signal.aborted || (error instanceof LlmError && error.code === 'aborted')) return { status: 'cancelled' };
  if (error instanceof LlmError && !error.retryable)
    return { status: 'failed', reason: 'error', message: error.message };
  throw error;
}

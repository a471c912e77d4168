/** How a run of the loop ended; the task's final status follows from it. */

export type FailureReason = 'max_steps' | 'budget' | 'error';

export type AgentOutcome =
  | { status: 'completed'; answer: string; steps: number }
  | { status: 'failed'; reason: FailureReason; message: string; steps: number }
  | { status: 'cancelled'; steps: number }
  /** The model asked the user something; the task resumes when the answer is in memory. */
  | { status: 'waiting'; question: string; callId: string; steps: number };

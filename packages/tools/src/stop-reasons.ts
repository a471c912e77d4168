/**
 * Why a run's signal was aborted (its reason): a user's cancel, or its worker's shutdown (a deploy, a
 * scale-down), after which the task goes on on another worker. A tool says which to the model.
 */
export const CANCELLED = Object.freeze({ stop: 'cancelled' as const });
export const SHUTDOWN = Object.freeze({ stop: 'shutdown' as const });

/** Whether a run was stopped by its worker's shutdown (its signal's reason). */
export function stoppedByShutdown(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason === SHUTDOWN;
}

import type { AgentqErrorCode } from './error-codes.js';

/**
 * agentq's one error family. Every error a caller handles extends this: a stable `code` (what a
 * program branches on, never the message) and whether trying the same thing again, unchanged, can
 * succeed (the condition passes by itself: a limit resets, Redis comes back). A plain `Error` is left
 * for what no caller handles: a broken invariant, a bug.
 */
export abstract class AgentqError extends Error {
  /** The condition, in snake_case; stable across versions; one of AGENTQ_ERROR_CODES (error-codes.ts). */
  abstract readonly code: AgentqErrorCode;
  /** Whether the same call, unchanged, can succeed later. */
  abstract readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Whether `error` is one of agentq's, with its code. */
export function isAgentqError(error: unknown): error is AgentqError {
  return error instanceof AgentqError;
}

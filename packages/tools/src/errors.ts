/** The tools package's error family: a refusal the model can act on, as plain data. */
import { AgentqError, type ToolErrorCode } from '@agentq/contract';

export type { ToolErrorCode };

export class ToolError extends AgentqError {
  /** A refusal of these arguments: the model changes them, not the time it tries. */
  readonly retryable = false;
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** What the API answered when it said no: its status, its error code, what to fix, and each bad field. */
import { AgentqError, type ClientErrorCode } from '@agentq/contract';

/** The API's error codes (its `error.code`), and the client's own: `network` (no answer), `timeout` (a wait ran out). */
export type { ClientErrorCode };

export class AgentqApiError extends AgentqError {
  constructor(
    readonly code: ClientErrorCode,
    message: string,
    /** The HTTP status (0 when no answer came, or the client refused a call before sending it). */
    readonly status: number,
    /** For `invalid_request`: each bad field with its path. */
    readonly details?: unknown,
    /** Seconds the API asked to wait before trying again (`Retry-After`). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  /** Worth trying again later: the API was away, busy or the tenant at a limit. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

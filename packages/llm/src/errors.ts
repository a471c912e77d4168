/**
 * The llm package's one error family. `retryable` is derived from the status in one place
 * (408, 409, 429 and 5xx, timeouts and connection errors, and a 2xx whose body is broken: cut off,
 * not JSON, no choices); the rest fail at once, a 429 that says the quota is spent (`quota_exceeded`) too.
 */
import { AgentqError, type LlmErrorCode } from '@agentq/contract';

export type { LlmErrorCode };

export interface LlmErrorOptions {
  code: LlmErrorCode;
  message: string;
  status?: number;
  /** Seconds the provider asked us to wait (Retry-After). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class LlmError extends AgentqError {
  readonly code: LlmErrorCode;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(options: LlmErrorOptions) {
    super(options.message, { cause: options.cause });
    this.code = options.code;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get retryable(): boolean {
    return isRetryableCode(this.code);
  }

  /**
   * Whether the endpoint could not be reached or could not serve at all: connection refused or reset,
   * DNS, a timed-out attempt, a 5xx answer. Not a 429 (the provider's word, with a time), a 4xx, a
   * broken 2xx, or a call past its whole deadline (which fails the task: AGENTQ_LLM_DEADLINE_MS).
   */
  get unreachable(): boolean {
    return (
      this.code === 'connection' ||
      this.code === 'timeout' ||
      (this.code === 'server_error' && (this.status === undefined || this.status >= 500))
    );
  }
}

/** Whether an error body's `code` or `type` says the account's quota is spent. */
export function quotaSpent(provider: { code?: unknown; type?: unknown }): boolean {
  return provider.code === 'insufficient_quota' || provider.type === 'insufficient_quota';
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function isRetryableCode(code: LlmErrorCode): boolean {
  return (
    code === 'rate_limited' ||
    code === 'server_error' ||
    code === 'timeout' ||
    code === 'connection' ||
    code === 'bad_response'
  );
}

/**
 * `provider`: the body's `error.code` and `error.type`. A 429 that says the account's quota is spent
 * (OpenAI's `insufficient_quota`, in its code or, from some servers, its type only) is billing, not a
 * rate: waiting does not end it.
 */
export function codeForStatus(status: number, provider: { code?: unknown; type?: unknown } = {}): LlmErrorCode {
  if (status === 429) return quotaSpent(provider) ? 'quota_exceeded' : 'rate_limited';
  if (status === 408) return 'timeout';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (isRetryableStatus(status)) return 'server_error';
  return 'bad_request';
}

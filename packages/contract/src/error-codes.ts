/**
 * Every code an AgentqError may carry, by the part that throws it. `AgentqError.code` is typed as one of
 * these, so an error class with a code missing here does not compile; and the API's answers
 * (apps/api/src/api-error.ts, a record over every code) do not compile until a code added here says how
 * the API answers it. A code two parts share means the same in both (`not_found`).
 */
import { API_ERROR_CODES, type ApiErrorCode } from './api-errors.js';

/** A model call's (@agentq/llm's LlmError): `retryable` follows from the code. */
export const LLM_ERROR_CODES = [
  'rate_limited',
  /** A 429 that says the account's quota is spent (OpenAI's `insufficient_quota`: billing): not tried again. */
  'quota_exceeded',
  'server_error',
  'timeout',
  'connection',
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'aborted',
  'bad_response',
  /** No answer within the call's whole deadline, retries included: not tried again. */
  'deadline_exceeded',
] as const;
export type LlmErrorCode = (typeof LLM_ERROR_CODES)[number];

/** A tool's refusal the model can act on (@agentq/tools's ToolError), and the tools' other errors. */
export const TOOL_ERROR_CODES = [
  'path_outside_workdir',
  'not_found',
  'invalid_arguments',
  'edit_mismatch',
  'tool_unavailable',
  'file_too_large',
  /** An MCP server's answer past AGENTQ_MCP_ANSWER_MB. */
  'answer_too_large',
] as const;
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];

/** What agentq's services throw: the store, scheduling, the task service, the loop, the worker, the configuration. */
export const SERVICE_ERROR_CODES = [
  // contract: BatchLineError
  'invalid_batch_line',
  // config: ConfigError
  'invalid_config',
  // tools: BlockedDestinationError (a model's fetch, a webhook), SandboxError (no jail at start-up)
  'blocked_destination',
  'sandbox_unavailable',
  // store
  'invalid_record',
  'storage_too_new',
  'cell_count_changed',
  'task_missing',
  'room_hold_lost',
  'events_changed',
  'keys_changed',
  'not_replicated',
  'no_room',
  'schedule_limit',
  // scheduling: UnknownPoolError
  'unknown_agent',
  // tasks
  'enqueue_failed',
  'tenant_gone',
  'schedule_changed',
  'webhook_unsigned',
  'fork_refused',
  'daily_limit',
  'redis_full',
  // core: RunLostError
  'run_lost',
  // worker: WaitForRateLimit (shared with a model call's), WaitForModel (its endpoint is unreachable)
  'rate_limited',
  'model_unreachable',
] as const;

/** @agentq/client's own (`network`: no answer; `timeout`: a wait ran out) and the CLI's (`unreachable`, `usage`). */
export const CLIENT_ERROR_CODES = ['network', 'timeout', 'unreachable', 'usage'] as const;
/** What @agentq/client's AgentqApiError carries: the API's codes, or the client's own. */
export type ClientErrorCode = ApiErrorCode | 'network' | 'timeout';

export type AgentqErrorCode =
  | ApiErrorCode
  | LlmErrorCode
  | ToolErrorCode
  | (typeof SERVICE_ERROR_CODES)[number]
  | (typeof CLIENT_ERROR_CODES)[number];

/** Every code once. */
export const AGENTQ_ERROR_CODES: readonly AgentqErrorCode[] = [
  ...new Set([
    ...API_ERROR_CODES,
    ...LLM_ERROR_CODES,
    ...TOOL_ERROR_CODES,
    ...SERVICE_ERROR_CODES,
    ...CLIENT_ERROR_CODES,
  ]),
];

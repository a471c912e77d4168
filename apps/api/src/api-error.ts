/**
 * Errors the API answers with, as plain data: `{ "error": { "code", "message", "details" } }`.
 * Each of agentq's errors is answered by its code, in one record over every code (ANSWERS) that the
 * compiler keeps complete; the HTTP status follows from the answer's code in another (HTTP_STATUS). A
 * client's mistake, whoever caught it (a route, the body parser, the router decoding the path), is a 4xx
 * that says what to fix; only agentq's own faults are a 500 (logged), and Redis being away is a 503.
 */
import { AgentqError, type AgentqErrorCode, type ApiErrorCode } from '@agentq/contract';
import type { ErrorRequestHandler } from 'express';
import { IdempotencyMismatchError, isRedisOutOfMemory, NoRoomError, ScheduleLimitError } from '@agentq/store';
import { DailyLimitError, RedisFullError } from '@agentq/tasks';
import type { Logger } from '@agentq/telemetry';

export { API_ERROR_CODES, type ApiErrorCode } from '@agentq/contract';

export class ApiError extends AgentqError {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly details?: unknown,
    /** Sent as `Retry-After`: when trying again can succeed. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  /** A limit that resets, or Redis or a replica away: the same request can succeed later. */
  get retryable(): boolean {
    return this.code === 'limit_reached' || this.code === 'unavailable';
  }
}

/** The HTTP status of each of the API's error codes. */
const HTTP_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  idempotency_mismatch: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  headers_too_large: 431,
  limit_reached: 429,
  unavailable: 503,
  internal: 500,
} as const satisfies Record<ApiErrorCode, number>;

export function statusFor(code: ApiErrorCode): number {
  return HTTP_STATUS[code];
}

/** The JSON body of an error, for the places that answer without Express (a malformed request line). */
export function errorBody(error: ApiError): string {
  return JSON.stringify({
    error: {
      code: error.code,
      message: error.message,
      ...(error.details !== undefined ? { details: error.details } : {}),
    },
  });
}

/**
 * Turns anything thrown in a route (or by the body parser or the router) into the error shape.
 * @param options.redisReady whether Redis answers now: a failure while it does not is a 503, not a 500.
 * @param options.logger where an unexpected error is written (the client gets a 500 without its details).
 */
export function errorHandler(options: { redisReady: () => boolean; logger: Logger }): ErrorRequestHandler {
  return (error: unknown, request, response, _next) => {
    let apiError = toApiError(error);
    if (apiError.code === 'internal' && !options.redisReady())
      apiError = new ApiError('unavailable', 'Redis does not answer; try again shortly.');
    if (apiError.code === 'internal')
      options.logger.error({ err: error, method: request.method, path: request.path }, 'request failed');
    if (response.headersSent) {
      // An error after a stream began (SSE): nothing more can be said in its shape.
      response.end();
      return;
    }
    if (apiError.retryAfterSeconds !== undefined) response.set('retry-after', String(apiError.retryAfterSeconds));
    else if (apiError.code === 'unavailable') response.set('retry-after', '2');
    response.status(statusFor(apiError.code)).type('application/json').send(errorBody(apiError));
  };
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof AgentqError) return answerTo(error);
  const { type, status, statusCode } = (error ?? {}) as { type?: string; status?: number; statusCode?: number };
  switch (type) {
    case 'entity.too.large': {
      const limit = (error as { limit?: number }).limit;
      return new ApiError(
        'payload_too_large',
        `The request body is larger than the limit of ${limit} bytes. Send fewer tasks per request.`,
      );
    }
    case 'entity.parse.failed':
      return new ApiError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
    case 'charset.unsupported':
      return new ApiError(
        'unsupported_media_type',
        `The body's charset "${(error as { charset?: string }).charset}" is not supported: send JSON in UTF-8 (content-type: application/json).`,
      );
    case 'encoding.unsupported':
      return new ApiError(
        'unsupported_media_type',
        `Content-Encoding "${(error as { encoding?: string }).encoding}" is not supported: send the body as is, or gzip, deflate or br.`,
      );
  }
  // zlib's, from a body that is not what its Content-Encoding says (http-errors kept its code).
  if (String((error as { code?: unknown }).code).startsWith('Z_')) {
    return new ApiError(
      'invalid_request',
      `The body could not be decompressed as its Content-Encoding says (${(error as Error).message}): send it compressed that way, or without Content-Encoding.`,
    );
  }
  if (isRedisOutOfMemory(error)) return redisOutOfMemory();
  if (error instanceof URIError)
    return new ApiError(
      'invalid_request',
      `The path is not valid percent-encoding (${error.message}): encode it with encodeURIComponent.`,
    );
  const code = status ?? statusCode;
  // Anything else Express or its parsers marked as the client's (http-errors): its status and message.
  if (typeof code === 'number' && code >= 400 && code < 500) {
    return new ApiError(
      code === 413
        ? 'payload_too_large'
        : code === 415
          ? 'unsupported_media_type'
          : code === 404
            ? 'not_found'
            : 'invalid_request',
      (error as Error).message,
    );
  }
  return internal();
}

/** A 500: what it was goes to the log (errorHandler), never to the client. */
function internal(): ApiError {
  return new ApiError('internal', 'Internal error; see the API logs.');
}

/** An answer: the API's code, with the error's message; or made from the error (its fields, other words). */
type Answer = ApiErrorCode | ((error: AgentqError) => ApiError);

/**
 * How the API answers each of agentq's errors, by its code (an ApiError is answered as it is). A code
 * added to AGENTQ_ERROR_CODES is a compile error here until it has its answer. `internal` is a 500 with
 * the error logged: agentq's own faults, and errors of parts the API never runs (a worker's, a model
 * call's, a client's), which would be a bug here.
 */
const ANSWERS = {
  // Codes the API's own errors share with other parts: a tool's `not_found` is one; a model provider's
  // refusals are agentq's trouble, never the client's.
  invalid_request: 'invalid_request',
  invalid_json: 'invalid_json',
  unauthorized: 'internal',
  forbidden: 'internal',
  not_found: 'not_found',
  conflict: 'conflict',
  idempotency_mismatch: (error) =>
    error instanceof IdempotencyMismatchError ? idempotencyMismatch(error) : internal(),
  payload_too_large: 'payload_too_large',
  uri_too_long: 'uri_too_long',
  unsupported_media_type: 'unsupported_media_type',
  headers_too_large: 'headers_too_large',
  limit_reached: 'limit_reached',
  unavailable: 'unavailable',
  internal: 'internal',
  // What a client sent, found wrong past the routes' own checks.
  invalid_batch_line: 'invalid_request',
  unknown_agent: 'invalid_request',
  path_outside_workdir: 'invalid_request',
  invalid_arguments: 'invalid_request',
  file_too_large: 'payload_too_large',
  // Gone, or refused as things stand.
  task_missing: 'not_found',
  fork_refused: 'conflict',
  tenant_gone: (error) => new ApiError('conflict', `This schedule is paused: ${error.message}.`),
  schedule_changed: 'conflict',
  webhook_unsigned: 'invalid_request',
  // A tenant's limits: which one, by how much, and when to try again. These read the fields of the class
  // the code belongs to (another class with the code would be a bug: a 500, logged).
  no_room: (error) => (error instanceof NoRoomError ? noRoom(error) : internal()),
  schedule_limit: (error) => (error instanceof ScheduleLimitError ? scheduleLimit(error) : internal()),
  daily_limit: (error) => (error instanceof DailyLimitError ? dailyLimit(error) : internal()),
  // Redis full, away, behind or busy: the same request can succeed shortly.
  redis_full: (error) => (error instanceof RedisFullError ? redisFull(error) : internal()),
  enqueue_failed: (error) => (isRedisOutOfMemory(error.cause) ? redisOutOfMemory() : submitAgain(error)),
  not_replicated: (error) =>
    new ApiError('unavailable', `${error.message}: Redis's replicas are behind; try again shortly.`),
  room_hold_lost: submitAgain,
  keys_changed: submitAgain,
  events_changed: (error) => new ApiError('unavailable', `${error.message}: read them again.`),
  // agentq's own faults: a record it cannot read, storage or cells it does not match.
  invalid_record: 'internal',
  storage_too_new: 'internal',
  cell_count_changed: 'internal',
  invalid_config: 'internal',
  // Errors of the worker, its tools and its model calls, and of clients: never thrown in the API.
  edit_mismatch: 'internal',
  tool_unavailable: 'internal',
  answer_too_large: 'internal',
  blocked_destination: 'internal',
  sandbox_unavailable: 'internal',
  run_lost: 'internal',
  rate_limited: 'internal',
  quota_exceeded: 'internal',
  model_unreachable: 'internal',
  server_error: 'internal',
  timeout: 'internal',
  connection: 'internal',
  bad_request: 'internal',
  aborted: 'internal',
  bad_response: 'internal',
  deadline_exceeded: 'internal',
  network: 'internal',
  unreachable: 'internal',
  usage: 'internal',
} satisfies Record<AgentqErrorCode, Answer>;

function answerTo(error: AgentqError): ApiError {
  const answer: Answer = ANSWERS[error.code];
  if (typeof answer === 'function') return answer(error);
  return answer === 'internal' ? internal() : new ApiError(answer, error.message);
}

/** A submit cut short by a condition that passes (Redis away, two writers at once, a hold that lapsed). */
function submitAgain(error: AgentqError): ApiError {
  return new ApiError(
    'unavailable',
    `${error.message}. Submit again (tasks with an idempotencyKey are not created twice).`,
  );
}

function dailyLimit(error: DailyLimitError): ApiError {
  const { tenant, spent, limit, resetsAt } = error;
  return new ApiError(
    'limit_reached',
    error.message,
    { tenant, spent, limit, resetsAt: resetsAt.toISOString() },
    Math.ceil((resetsAt.getTime() - Date.now()) / 1000),
  );
}

function redisFull(error: RedisFullError): ApiError {
  const { usedBytes, maxBytes, percent } = error.full;
  return new ApiError('unavailable', error.message, { usedBytes, maxBytes, percent }, 30);
}

/** A tenant's submit (a retry, a fork) past its limits: which one, by how much, and when to try again. */
function noRoom(error: NoRoomError): ApiError {
  const { tenant, requested, unfinished, stored, limits } = error;
  if (error.limit === 'unfinished') {
    return new ApiError(
      'limit_reached',
      `Tenant ${tenant} has ${unfinished} tasks not yet ended (pending, queued, running or waiting); ${requested} more would pass its limit of ${limits.unfinished} (tenants.${tenant}.limits.unfinished). Nothing was submitted: submit again as they end, or cancel some. GET /v1/usage shows where it stands against each limit.`,
      { tenant, unfinished, requested, limit: limits.unfinished },
      5,
    );
  }
  if (error.limit === 'bytes' && error.bytes && limits.bytes !== undefined) {
    const { used, requested: asked } = error.bytes;
    return new ApiError(
      'limit_reached',
      `Tenant ${tenant}'s stored tasks have written ${(used / MIB).toFixed(1)} MiB to Redis (prompts, messages, tool outputs, events, answers; ended tasks are kept for AGENTQ_RETENTION_HOURS); ${requested} more tasks (${(asked / MIB).toFixed(2)} MiB to start with) would pass its limit of ${(limits.bytes / MIB).toFixed(1)} MiB (tenants.${tenant}.limits.mb). Nothing was submitted: delete ended tasks you no longer need (DELETE /v1/tasks/:id, or a bulk delete), or submit again as the oldest pass their retention. GET /v1/usage shows where it stands against each limit.`,
      { tenant, writtenBytes: used, requestedBytes: asked, limitBytes: limits.bytes },
      60,
    );
  }
  return new ApiError(
    'limit_reached',
    `Tenant ${tenant} holds ${stored} tasks, ended ones included (they are kept for AGENTQ_RETENTION_HOURS); ${requested} more would pass its limit of ${limits.stored} (tenants.${tenant}.limits.stored). Nothing was submitted: submit again as the oldest pass their retention, or ask the operator for a higher limit. GET /v1/usage shows where it stands against each limit.`,
    { tenant, stored, requested, limit: limits.stored },
    60,
  );
}

/** A new (or grown) schedule past its tenant's limits, as a submit past them is answered. */
function scheduleLimit(error: ScheduleLimitError): ApiError {
  const { tenant, limit } = error;
  if (limit.kind === 'schedules')
    return new ApiError(
      'limit_reached',
      `Tenant ${tenant} holds ${limit.count} schedules, paused ones included; one more would pass its limit of ${limit.max} (tenants.${tenant}.limits.schedules). Nothing was scheduled: delete schedules you no longer need (DELETE /v1/schedules/:id), or ask the operator for a higher limit.`,
      { tenant, schedules: limit.count, limit: limit.max },
      60,
    );
  return new ApiError(
    'limit_reached',
    `Tenant ${tenant}'s stored tasks and schedules have written ${(limit.used / MIB).toFixed(1)} MiB to Redis (a schedule holds its task and files for as long as it lives); this schedule (${(limit.requested / MIB).toFixed(2)} MiB more) would pass its limit of ${(limit.max / MIB).toFixed(1)} MiB (tenants.${tenant}.limits.mb). Nothing was scheduled: delete schedules or ended tasks you no longer need (DELETE /v1/schedules/:id, DELETE /v1/tasks/:id), or give the task smaller files. GET /v1/usage shows where it stands against each limit.`,
    { tenant, writtenBytes: limit.used, requestedBytes: limit.requested, limitBytes: limit.max },
    60,
  );
}

function idempotencyMismatch(error: IdempotencyMismatchError): ApiError {
  const tasks = error.mismatches.map(({ index, idempotencyKey, taskId }) => ({ index, idempotencyKey, taskId }));
  const made = error.created.length
    ? `another request stored one of these keys at the same moment, when ${error.created.length} tasks of this one were stored: those without an idempotencyKey were failed (enqueue_failed), those with one stay queued, answered when their key is sent again`
    : 'nothing of this request was submitted';
  return new ApiError(
    'idempotency_mismatch',
    `${error.message}. An idempotency key names the one task it made, and that task's body: ${made}. Send the same body again to get that task (GET /v1/tasks/${tasks[0]!.taskId}), or give a new task a new key.`,
    { tasks },
  );
}

const MIB = 1024 * 1024;

/** Redis refused a write: it is past its maxmemory. */
export function redisOutOfMemory(): ApiError {
  return new ApiError(
    'unavailable',
    'Redis is past its maxmemory and refuses writes (OOM): this request was not carried out. Delete ended tasks (DELETE /v1/tasks/:id, or a bulk delete), or ask the operator to give Redis more memory, then try again.',
    undefined,
    30,
  );
}

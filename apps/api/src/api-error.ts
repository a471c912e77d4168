/**
 * Errors the API answers with, as plain data: `{ "error": { "code", "message", "details" } }`.
 * The status follows from the code in one exhaustive switch.
 */
import type { ErrorRequestHandler } from 'express';

export type ApiErrorCode = 'invalid_request' | 'invalid_json' | 'unauthorized' | 'forbidden' | 'payload_too_large' | 'not_found' | 'conflict' | 'unavailable' | 'internal';

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export function statusFor(code: ApiErrorCode): number {
  switch (code) {
    case 'invalid_request':
    case 'invalid_json':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'unavailable':
      return 503;
    case 'internal':
      return 500;
  }
}

/** Turns anything thrown in a route (or by the body parser) into the error shape. */
export const errorHandler: ErrorRequestHandler = (error: unknown, _request, response, _next) => {
  const apiError = toApiError(error);
  if (apiError.code === 'internal') console.error('[api]', error);
  response.status(statusFor(apiError.code)).json({
    error: { code: apiError.code, message: apiError.message, ...(apiError.details !== undefined ? { details: apiError.details } : {}) },
  });
};

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const type = (error as { type?: string }).type;
  if (type === 'entity.too.large') {
    const limit = (error as { limit?: number }).limit;
    return new ApiError('payload_too_large', `The request body is larger than the limit of ${limit} bytes. Send fewer tasks per request.`);
  }
  if (type === 'entity.parse.failed') {
    return new ApiError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
  }
  return new ApiError('internal', 'Internal error; see the API logs.');
}

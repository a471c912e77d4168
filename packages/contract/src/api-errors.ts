/** The error codes the API answers with (`{ error: { code, message, details } }`): the server and every client share them. */
export const API_ERROR_CODES = [
  'invalid_request',
  'invalid_json',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'idempotency_mismatch',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'headers_too_large',
  'limit_reached',
  'unavailable',
  'internal',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

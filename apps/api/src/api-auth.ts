/**
 * API keys, when configured: every /v1 call and /admin/queues needs one, as `Authorization: Bearer
 * <key>`, an `x-api-key` header, or the `agentq_key` cookie the dashboard sets (a browser cannot add
 * headers to a page it navigates to). Health checks and the dashboard's own files stay open.
 */
import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ApiError } from './api-error.js';

export const KEY_COOKIE = 'agentq_key';

export function requireApiKey(keys: readonly string[]): RequestHandler {
  const accepted = keys.map((key) => Buffer.from(key));
  return (request, _response, next) => {
    const given = presentedKey(request.headers.authorization, request.get('x-api-key'), request.headers.cookie);
    const candidate = given ? Buffer.from(given) : undefined;
    if (candidate && accepted.some((key) => key.length === candidate.length && timingSafeEqual(key, candidate))) return next();
    next(new ApiError('unauthorized', given ? 'The API key is not valid.' : 'This API needs a key: send it as "Authorization: Bearer <key>".'));
  };
}

function presentedKey(authorization: string | undefined, header: string | undefined, cookies: string | undefined): string | undefined {
  if (authorization?.startsWith('Bearer ')) return authorization.slice('Bearer '.length).trim();
  if (header) return header.trim();
  const cookie = cookies?.split(';').map((part) => part.trim()).find((part) => part.startsWith(`${KEY_COOKIE}=`));
  return cookie ? decodeURIComponent(cookie.slice(KEY_COOKIE.length + 1)) : undefined;
}

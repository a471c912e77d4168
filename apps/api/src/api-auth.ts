/**
 * Who is calling. With API keys configured, every /v1 call and /admin/queues needs one, as
 * `Authorization: Bearer <key>` (the scheme in any case), an `x-api-key` header, or the `agentq_key`
 * cookie the dashboard sets (a browser cannot add headers to a page it navigates to). A key belongs
 * to a tenant, who sees only its own tasks; an admin key sees every tenant's and opens bull-board.
 *
 * Without keys the API is open to whoever reaches it, so it serves loopback only (start-api.ts
 * refuses anything else unless told to) and answers only requests that name it by a loopback host:
 * a web page cannot point a name of its own at 127.0.0.1 (DNS rebinding) to drive it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { isLoopbackHost } from '@agentq/config';
import { DEFAULT_TENANT } from '@agentq/store';
import { ApiError } from './api-error.js';

const KEY_COOKIE = 'agentq_key';

export interface Principal {
  tenant: string;
  /** Sees every tenant's tasks and opens bull-board. */
  admin: boolean;
}

/** A key as the configuration gives it: its SHA-256 (the file holds no key), its tenant, whether it is an admin's. */
export interface ApiKey {
  sha256: string;
  tenant: string;
  admin: boolean;
}

export interface AuthOptions {
  keys: readonly ApiKey[];
  /** Serve any Host when no keys are set (AGENTQ_ALLOW_NO_AUTH). Default false. */
  allowAnyHost?: boolean;
}

/** Sets `response.locals.principal`, or answers 401 (no or bad key) / 403 (a foreign Host without keys). */
export function authenticate(options: AuthOptions): RequestHandler {
  const known = options.keys.map((entry) => ({
    digest: Buffer.from(entry.sha256, 'hex'),
    principal: { tenant: entry.tenant, admin: entry.admin },
  }));
  if (known.length === 0) {
    const open: Principal = { tenant: DEFAULT_TENANT, admin: true };
    return (request, response, next) => {
      if (!options.allowAnyHost && !isLoopbackHost(request.hostname ?? '')) {
        return next(
          new ApiError(
            'forbidden',
            `Without API keys this agentq answers only loopback host names, not "${request.hostname}". Give tenants keys in the configuration file (tenants.<tenant>.keys) to serve it under other names.`,
          ),
        );
      }
      response.locals.principal = open;
      next();
    };
  }
  return (request, response, next) => {
    const presented = presentedKey(request.headers.authorization, request.get('x-api-key'), request.headers.cookie);
    if ('error' in presented) return next(new ApiError('unauthorized', presented.error));
    const given = digest(presented.key);
    // Every key is compared, in constant time, whichever matches: timing tells nothing.
    let found: Principal | undefined;
    for (const entry of known) if (timingSafeEqual(entry.digest, given)) found ??= entry.principal;
    if (!found) return next(new ApiError('unauthorized', 'The API key is not valid.'));
    response.locals.principal = found;
    next();
  };
}

/** The caller of a request that went through `authenticate`. */
export function principalOf(response: Response): Principal {
  return response.locals.principal as Principal;
}

/** Only admins: the rest get a 403 that says why. */
export const requireAdmin: RequestHandler = (_request, response, next) => {
  next(
    principalOf(response).admin
      ? undefined
      : new ApiError('forbidden', 'This needs an admin key (a key of a tenant with admin: true).'),
  );
};

/** Whether a caller may see a stored task: its own tenant's, or any for an admin. */
export function canSee(principal: Principal, record: { tenant?: string | undefined }): boolean {
  return principal.admin || (record.tenant ?? DEFAULT_TENANT) === principal.tenant;
}

const NEEDS_KEY = 'This API needs a key: send it as "Authorization: Bearer <key>".';

function presentedKey(
  authorization: string | undefined,
  header: string | undefined,
  cookies: string | undefined,
): { key: string } | { error: string } {
  if (authorization !== undefined) {
    const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    return match ? { key: match[1]! } : { error: `The Authorization header must be "Bearer <key>". ${NEEDS_KEY}` };
  }
  if (header !== undefined) return header.trim() ? { key: header.trim() } : { error: NEEDS_KEY };
  const cookie = cookies
    ?.split(';')
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${KEY_COOKIE}=`));
  if (cookie === undefined) return { error: NEEDS_KEY };
  try {
    const key = decodeURIComponent(cookie.slice(KEY_COOKIE.length + 1));
    return key ? { key } : { error: NEEDS_KEY };
  } catch {
    return { error: `The ${KEY_COOKIE} cookie is not valid; set the key again. ${NEEDS_KEY}` };
  }
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

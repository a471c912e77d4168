/**
 * Headers that keep a browser from turning what the API serves against its user. The dashboard shows
 * what models and tasks wrote (as text: dom.ts), so its page runs only its own scripts and its
 * import map, loads nothing from elsewhere, and may not be framed: a page of another site could
 * otherwise show it in a frame, under a decoy, and have its user click "cancel" (without keys, the API
 * answers a local dashboard framed by any site). No response is sniffed into another type, and a
 * link followed out of the dashboard does not say which task it came from.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RequestHandler } from 'express';

/** The dashboard page's policy: its inline import map allowed by its hash, taken from the page as served. */
function dashboardPolicy(indexHtml: string): string {
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml)?.[1];
  const scripts =
    importMap === undefined ? "'self'" : `'self' 'sha256-${createHash('sha256').update(importMap).digest('base64')}'`;
  return [
    "default-src 'self'",
    `script-src ${scripts}`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Sets the headers on every response (a route may set its own policy after, as bull-board's does). */
export function securityHeaders(indexHtmlPath: string): RequestHandler {
  const headers = {
    'content-security-policy': dashboardPolicy(readFileSync(indexHtmlPath, 'utf8')),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  return (_request, response, next) => {
    response.set(headers);
    next();
  };
}

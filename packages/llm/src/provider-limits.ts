/**
 * A provider's x-ratelimit-* headers (OpenAI, and the servers that copy them): what is left of its
 * limits and when each resets, e.g. `x-ratelimit-reset-tokens: 6m0s`, `1s`, `20ms`.
 */
import type { ProviderLimits } from './language-model.js';

/**
 * The longest one answer of a provider (its Retry-After, a limit's reset) holds a model's calls back:
 * believed up to 5 minutes, then the provider is asked again. The wait is shared by every worker, in
 * Redis: one broken answer (a proxy's `Retry-After: 4294967295`) would otherwise stop them for years.
 */
export const MAX_PROVIDER_WAIT_MS = 5 * 60_000;

/**
 * A wait a provider asked for in a header (`Retry-After: 30`, `x-ratelimit-reset-tokens: 6m0s`, or a
 * Retry-After as an HTTP date, RFC 9110: `Wed, 21 Oct 2026 07:28:00 GMT`, as this host's clock reads
 * it), as agentq keeps it: at most MAX_PROVIDER_WAIT_MS; undefined when the header is missing or neither
 * (a negative number, garbage).
 */
export function providerWaitMs(value: string | null | undefined, now = Date.now()): number | undefined {
  const ms = durationMs(value ?? null) ?? httpDateWaitMs(value ?? null, now);
  return ms === undefined ? undefined : Math.min(MAX_PROVIDER_WAIT_MS, ms);
}

/** How long until an HTTP date (`IMF-fixdate`, and the obsolete forms Date.parse reads); 0 for one past. */
function httpDateWaitMs(value: string | null, now: number): number | undefined {
  // A date names its weekday or month in letters; a bare number or a duration is not one.
  if (value === null || !/^[A-Za-z]{3},? /.test(value.trim())) return undefined;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

export function providerLimitsOf(headers: Headers): ProviderLimits | undefined {
  const remainingRequests = count(headers.get('x-ratelimit-remaining-requests'));
  const remainingTokens = count(headers.get('x-ratelimit-remaining-tokens'));
  if (remainingRequests === undefined && remainingTokens === undefined) return undefined;
  const resetRequestsMs = providerWaitMs(headers.get('x-ratelimit-reset-requests'));
  const resetTokensMs = providerWaitMs(headers.get('x-ratelimit-reset-tokens'));
  return {
    ...(remainingRequests !== undefined ? { remainingRequests } : {}),
    ...(remainingTokens !== undefined ? { remainingTokens } : {}),
    ...(resetRequestsMs !== undefined ? { resetRequestsMs } : {}),
    ...(resetTokensMs !== undefined ? { resetTokensMs } : {}),
  };
}

function count(value: string | null): number | undefined {
  const parsed = value === null || value.trim() === '' ? NaN : Number(value);
  return Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
}

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** `1h2m3.5s`, `6m0s`, `20ms`, or plain seconds (`2`); undefined when it is none of those. */
export function durationMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (!parts.length || parts.map((part) => part[0]).join('') !== text) return undefined;
  return Math.round(parts.reduce((total, [, amount, unit]) => total + Number(amount) * UNIT_MS[unit!]!, 0));
}

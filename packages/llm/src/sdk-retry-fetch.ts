/**
 * A `fetch` for the openai SDK that keeps its own retries short. The SDK retries a 429 and a 5xx (up to
 * AGENTQ_LLM_MAX_RETRIES), sleeping out the answer's `Retry-After` (under a minute) inside the call, and
 * so inside its worker slot: a tenant whose prompts draw `Retry-After: 59` every time would hold every
 * slot of its pool for minutes. Two answers are marked `x-should-retry: false`, which the SDK obeys, and
 * the call fails at once:
 * - one whose wait (`retry-after-ms`, `Retry-After`) is longer than SDK_RETRY_WAIT_MS: the worker holds
 *   that tenant's calls of the model for it instead, its slot given back (outage-guarded-model.ts);
 * - a 429 whose body says the account's quota is spent (OpenAI's `insufficient_quota`: credit or
 *   billing), which no wait ends (`quota_exceeded`, errors.ts).
 */
import { quotaSpent } from './errors.js';
import { providerWaitMs } from './provider-limits.js';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The longest wait the SDK may sleep out in a call before it tries again. */
export const SDK_RETRY_WAIT_MS = 2_000;

/** A 429's body larger than this is not an error body: it is passed on unread. */
const ERROR_BODY_BYTES = 64 * 1024;

export function sdkRetryFetch(fetch: Fetch): Fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.status !== 429 && response.status < 500) return response;
    if (askedWaitMs(response.headers) > SDK_RETRY_WAIT_MS) return notRetried(response);
    if (response.status !== 429 || Number(response.headers.get('content-length') ?? 0) > ERROR_BODY_BYTES)
      return response;
    const text = await response.text();
    const headers = new Headers(response.headers);
    if (quotaSpentIn(text)) headers.set('x-should-retry', 'false');
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  };
}

/** The wait an answer asks for, as the SDK reads it (`retry-after-ms` first); 0 when it names none. */
function askedWaitMs(headers: Headers): number {
  const ms = Number(headers.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  return providerWaitMs(headers.get('retry-after')) ?? 0;
}

/** The same answer, marked for the SDK not to retry it (its body passed on unread). */
function notRetried(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.set('x-should-retry', 'false');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

function quotaSpentIn(text: string): boolean {
  try {
    return quotaSpent((JSON.parse(text) as { error?: { code?: unknown; type?: unknown } })?.error ?? {});
  } catch {
    // Not JSON: a proxy's page, not the provider's word on the quota.
    return false;
  }
}

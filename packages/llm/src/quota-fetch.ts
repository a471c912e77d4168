/**
 * A `fetch` for the openai SDK that stops it retrying a 429 whose body says the account's quota is
 * spent (OpenAI's `insufficient_quota`: credit or billing). The SDK retries every 429 (up to
 * AGENTQ_LLM_MAX_RETRIES, waiting between), but no wait ends that one: the answer is marked with
 * `x-should-retry: false`, which the SDK obeys, and the call fails at once (`quota_exceeded`, errors.ts).
 */
import { quotaSpent } from './errors.js';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A 429's body larger than this is not an error body: it is passed on unread. */
const ERROR_BODY_BYTES = 64 * 1024;

export function quotaAwareFetch(fetch: Fetch): Fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.status !== 429 || Number(response.headers.get('content-length') ?? 0) > ERROR_BODY_BYTES)
      return response;
    const text = await response.text();
    const headers = new Headers(response.headers);
    if (quotaSpentIn(text)) headers.set('x-should-retry', 'false');
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  };
}

function quotaSpentIn(text: string): boolean {
  try {
    return quotaSpent((JSON.parse(text) as { error?: { code?: unknown; type?: unknown } })?.error ?? {});
  } catch {
    // Not JSON: a proxy's page, not the provider's word on the quota.
    return false;
  }
}

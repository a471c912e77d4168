/**
 * A 429 that outlasted the SDK's retries pauses the whole pool (every worker of it, on every machine)
 * with BullMQ's rate limit, instead of every job hammering the endpoint; the job goes back to the queue
 * without using an attempt.
 */
import { RateLimitError } from 'bullmq';
import type { LlmError } from '@agentq/llm';

/** How long the pool pauses when the provider gave no Retry-After. */
export const DEFAULT_RATE_LIMIT_MS = 5_000;

export async function pausePool(error: LlmError, rateLimit: (ms: number) => Promise<void>): Promise<never> {
  await rateLimit(error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : DEFAULT_RATE_LIMIT_MS);
  throw new RateLimitError();
}

/**
 * How often a task's run is tried again after an error that is not an outage of its model endpoint
 * (those wait without spending attempts: models.<model>.outage), and how long between tries. An agent
 * sets its default in the configuration file (`agents.<agent>.retry`); a submit may ask for its own
 * (`retry` of a task), within the bounds here and the agent's `maxAttempts`.
 */

/** A retry policy: `attempts` runs in all (the first included); `backoff` seconds before the second, doubling after. */
export interface RetryPolicy {
  attempts: number;
  backoff: number;
}

/** The bounds every policy is held to: the file's and a submit's. */
export const RETRY_LIMITS = {
  /** The most attempts any task may have (an agent's `maxAttempts` may allow fewer). */
  maxAttempts: 10,
  /** The shortest first wait, in seconds: a failing task never spins. */
  minBackoffSeconds: 1,
  /** The longest first wait, and the longest any wait grows to, in seconds. */
  maxBackoffSeconds: 3_600,
} as const;

/** What a task gets when neither its agent nor its submit says: 3 attempts, 2 s then 4 s apart. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, backoff: 2 };

/** How long to wait before the next attempt, after `failed` attempts failed (1 after the first). */
export function retryDelayMs(policy: RetryPolicy, failed: number): number {
  const seconds = Math.min(policy.backoff * 2 ** Math.max(0, failed - 1), RETRY_LIMITS.maxBackoffSeconds);
  return Math.round(seconds * 1000);
}

/**
 * The retry policy a task's run follows: what its submit asked for (its root's, for a subtask), else its
 * agent's (`agents.<agent>.retry`, the planner's `planner.retry`), never more attempts than the agent's
 * `maxAttempts` (the API refuses more on submit; this holds a task stored before the agent's was lowered).
 */
import { retryPolicyFor, type Config } from '@agentq/config';
import type { RetryPolicy } from '@agentq/contract';
import type { TaskRecord } from '@agentq/store';

export function taskRetryPolicy(
  record: Pick<TaskRecord, 'retryAttempts' | 'retryBackoff'>,
  config: Config,
  pool: string,
): RetryPolicy {
  const agent = retryPolicyFor(config, pool);
  return {
    attempts: Math.min(record.retryAttempts ?? agent.attempts, agent.maxAttempts),
    backoff: record.retryBackoff ?? agent.backoff,
  };
}

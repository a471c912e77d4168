import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@agentq/config';
import { DEFAULT_RETRY_POLICY, retryDelayMs } from '@agentq/contract';
import { taskRetryPolicy } from './retry-policy.js';

/** The shipped agents, with `coder`'s retry set as given. */
function configWith(retry: Record<string, number>) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agentq-retry-')), 'agentq.config.json');
  writeFileSync(
    file,
    JSON.stringify({ agents: { coder: { description: 'codes', instructions: 'Write code.', retry } } }),
  );
  return loadConfig({ env: { AGENTQ_CONFIG: file } });
}

describe('retry policies', () => {
  it("follows a task's own policy, else its agent's, else the default", () => {
    const config = configWith({ attempts: 5, backoff: 10 });
    expect(taskRetryPolicy({}, config, 'coder')).toEqual({ attempts: 5, backoff: 10 });
    expect(taskRetryPolicy({ retryAttempts: 2 }, config, 'coder')).toEqual({ attempts: 2, backoff: 10 });
    expect(taskRetryPolicy({ retryBackoff: 3 }, config, 'planner')).toEqual({
      attempts: DEFAULT_RETRY_POLICY.attempts,
      backoff: 3,
    });
  });

  it("holds a stored policy to the agent's most attempts, lowered after it was submitted", () => {
    const config = configWith({ attempts: 1, maxAttempts: 2 });
    expect(taskRetryPolicy({ retryAttempts: 10 }, config, 'coder').attempts).toBe(2);
  });

  it('doubles the wait after each failed attempt, never past an hour', () => {
    const policy = { attempts: 10, backoff: 2 };
    expect([1, 2, 3, 4].map((failed) => retryDelayMs(policy, failed))).toEqual([2_000, 4_000, 8_000, 16_000]);
    expect(retryDelayMs({ attempts: 10, backoff: 3_000 }, 9)).toBe(3_600_000);
  });

  it('refuses a policy in the file whose attempts pass its own most', () => {
    expect(() => configWith({ attempts: 5, maxAttempts: 3 })).toThrow(
      /agents\.coder\.retry\.attempts: "attempts" is more than "maxAttempts"/,
    );
    expect(() => configWith({ attempts: 11 })).toThrow(/agents\.coder\.retry\.attempts/);
    expect(() => configWith({ backoff: 0 })).toThrow(/agents\.coder\.retry\.backoff/);
  });
});

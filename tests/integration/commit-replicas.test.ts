/**
 * AGENTQ_COMMIT_REPLICAS through the API: a write that no replica confirms (this Redis has none) is a
 * 503 that says so and what to do, not a 500.
 */
import { afterAll, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack | undefined;
afterAll(async () => stack?.close());

it('answers 503 for a write no replica confirmed, naming the setting', async () => {
  stack = await startStack({
    pools: [],
    env: { AGENTQ_COMMIT_REPLICAS: '1', AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS: '50' },
  });
  const [taskId] = await stack.submit([{ prompt: 'wait in line', agent: 'casual' }]);
  const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
  expect(response.status).toBe(503);
  expect(((await response.json()) as { error: { code: string; message: string } }).error).toEqual({
    code: 'unavailable',
    message: `The commit of task ${taskId} was not confirmed by 1 Redis replica within 50 ms (AGENTQ_COMMIT_REPLICAS): Redis's replicas are behind; try again shortly.`,
  });
});

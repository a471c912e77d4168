/**
 * One tenant's 429s and 503s with the default SDK retries (AGENTQ_LLM_MAX_RETRIES 3), attacked from
 * outside (round 4). The SDK slept out each Retry-After (under a minute) inside the call, holding its
 * worker slot, before the worker's per-tenant hold began: a tenant whose prompts drew `Retry-After: 60`
 * filled every slot of the pool, and another tenant's one-call task was not served after 30 s (429 or
 * 503). Now an answer asking a wait over 2 s is not retried by the SDK (sdk-retry-fetch.ts): the victim
 * is served within a few hundred ms. Real processes, default retry settings, the wire double as the model.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { firstUserText, type DoubleReply, type DoubleRequest } from '@agentq/llm';
import { apiCall } from '../helpers/api-call.js';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

const HOSTILE = `hostile-${randomBytes(8).toString('hex')}`;
/** Another hostile tenant: the first one's calls are held by its 429s (per tenant and model) by then. */
const FAILING = `failing-${randomBytes(8).toString('hex')}`;
const VICTIM = `victim-${randomBytes(8).toString('hex')}`;
const served: Array<{ prompt: string; at: number }> = [];
let limitedCalls = 0;
const reply = (request: DoubleRequest): DoubleReply => {
  const prompt = firstUserText(request);
  if (prompt.startsWith('LIMITED')) {
    limitedCalls += 1;
    return {
      error: {
        status: 429,
        message: 'Request too large for gpt-x in organization org-1 on tokens per min (TPM): Limit 30000',
        type: 'tokens',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after': '60' },
      },
    };
  }
  if (prompt.startsWith('FAILING')) {
    limitedCalls += 1;
    return { error: { status: 503, message: 'overloaded', type: 'server_error', headers: { 'retry-after': '60' } } };
  }
  served.push({ prompt, at: Date.now() });
  return { content: 'served' };
};

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'sdk-retry-slots',
    model: 'm',
    rules: [{ reply }],
    workers: 1,
    pools: 'casual',
    env: {
      AGENTQ_CONCURRENCY: '4',
      ...tenantsEnv({ hostile: { keys: [HOSTILE] }, failing: { keys: [FAILING] }, victim: { keys: [VICTIM] } }),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

it("does not hold another tenant's task while one tenant's tasks draw 429s inside the SDK's retries", async () => {
  const hostile = await apiCall<{ tasks: Array<{ id: string }> }>(fleet.baseUrl, HOSTILE, 'POST', '/v1/tasks', {
    tasks: Array.from({ length: 8 }, (_, index) => ({ prompt: `LIMITED ${index}`, agent: 'casual' })),
  });
  expect(hostile.status).toBe(202);
  while (limitedCalls < 4) await new Promise((resolve) => setTimeout(resolve, 50));
  const submittedAt = Date.now();
  const victim = await apiCall<{ tasks: Array<{ id: string }> }>(fleet.baseUrl, VICTIM, 'POST', '/v1/tasks', {
    tasks: [{ prompt: 'victim', agent: 'casual' }],
  });
  const ended = await Promise.race([
    waitForEnd(fleet.baseUrl, victim.body.tasks[0]!.id, { authorization: `Bearer ${VICTIM}` }).then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), 30_000)),
  ]);
  const at = served.find((call) => call.prompt === 'victim')?.at;
  console.log(
    `victim's one-call task with another tenant's 4 tasks drawing 429 Retry-After: 60 (default SDK retries): ${at ? `served ${at - submittedAt} ms after its submit` : `not served after ${Date.now() - submittedAt} ms`}; ${limitedCalls} 429s so far`,
  );
  for (const task of hostile.body.tasks) await apiCall(fleet.baseUrl, HOSTILE, 'POST', `/v1/tasks/${task.id}/cancel`);
  expect(ended).toBe(true);
  expect(at! - submittedAt).toBeLessThan(5_000);
}, 90_000);

it("does not hold another tenant's task while one tenant's prompts draw 503s with Retry-After inside the SDK's retries", async () => {
  limitedCalls = 0;
  const hostile = await apiCall<{ tasks: Array<{ id: string }> }>(fleet.baseUrl, FAILING, 'POST', '/v1/tasks', {
    tasks: Array.from({ length: 8 }, (_, index) => ({ prompt: `FAILING ${index}`, agent: 'casual' })),
  });
  expect(hostile.status).toBe(202);
  while (limitedCalls < 4) await new Promise((resolve) => setTimeout(resolve, 50));
  const submittedAt = Date.now();
  const victim = await apiCall<{ tasks: Array<{ id: string }> }>(fleet.baseUrl, VICTIM, 'POST', '/v1/tasks', {
    tasks: [{ prompt: 'victim 2', agent: 'casual' }],
  });
  const ended = await Promise.race([
    waitForEnd(fleet.baseUrl, victim.body.tasks[0]!.id, { authorization: `Bearer ${VICTIM}` }).then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), 30_000)),
  ]);
  const at = served.find((call) => call.prompt === 'victim 2')?.at;
  console.log(
    `victim's one-call task with another tenant's 4 tasks drawing 503 Retry-After: 60 (default SDK retries): ${at ? `served ${at - submittedAt} ms after its submit` : `not served after ${Date.now() - submittedAt} ms`}; ${limitedCalls} 503s so far`,
  );
  for (const task of hostile.body.tasks) await apiCall(fleet.baseUrl, FAILING, 'POST', `/v1/tasks/${task.id}/cancel`);
  expect(ended).toBe(true);
  expect(at! - submittedAt).toBeLessThan(5_000);
}, 90_000);

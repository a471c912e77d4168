/**
 * A 429, used against other tenants. A tenant's prompts can draw 429s from the shared model every time
 * (its own key's quota, or a prompt the provider refuses as too large for its tokens per minute): the
 * hold that follows is that tenant's calls of that model alone, never the pool's; another tenant's
 * tasks, and the tenant's own tasks on other models, run on. And a task that draws 429s every time
 * ends: past models.<model>.outage.rateLimitedWaits 429s in a row, each spends an attempt; a 429 that
 * says the account's quota is spent fails at once. Real API and worker processes, the wire double as
 * the model.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { firstUserText, type DoubleReply, type DoubleRequest } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEventWhere } from '../helpers/sse.js';

const HOSTILE = `hostile-${randomBytes(8).toString('hex')}`;
const VICTIM = `victim-${randomBytes(8).toString('hex')}`;

/** Prompts the provider answers 429 every time: `LIMITED <seconds>` asks to wait that long; QUOTA: billing. */
const calls = new Map<string, number>();
const reply = (request: DoubleRequest): DoubleReply => {
  const prompt = firstUserText(request);
  calls.set(prompt, (calls.get(prompt) ?? 0) + 1);
  const limited = /LIMITED (\d+)/.exec(prompt);
  if (limited)
    return {
      error: {
        status: 429,
        message: 'Request too large for gpt-x in organization org-1 on tokens per min (TPM): Limit 30000',
        type: 'tokens',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after': limited[1]! },
      },
    };
  if (prompt.includes('QUOTA'))
    return {
      error: {
        status: 429,
        message: 'You exceeded your current quota, please check your plan and billing details.',
        type: 'insufficient_quota',
        code: 'insufficient_quota',
      },
    };
  return { content: 'served' };
};
const callsOf = (prompt: string) => calls.get(prompt) ?? 0;

/** Each 429 this many times in a row waits without spending an attempt. */
const RATE_LIMITED_WAITS = 2;

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'rate-limit-hold',
    model: 'm',
    rules: [{ reply }],
    workers: 2,
    pools: 'casual',
    env: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: '10',
      ...tenantsEnv(
        { hostile: { keys: [HOSTILE] }, victim: { keys: [VICTIM] } },
        {
          agents: {
            casual: {
              description: 'chats',
              instructions: 'You are a helpful assistant.',
              retry: { attempts: 2, maxAttempts: 3 },
            },
          },
          models: { m: { outage: { rateLimitedWaits: RATE_LIMITED_WAITS } }, held: {} },
        },
      ),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function submit(key: string, tasks: unknown[]): Promise<string[]> {
  const response = await fetch(`${fleet.baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify({ tasks }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

async function taskOf(key: string, id: string): Promise<TaskView> {
  return (await (await fetch(`${fleet.baseUrl}/v1/tasks/${id}`, { headers: auth(key) })).json()) as TaskView;
}

const isRateLimitedWait = (event: TaskEvent) => event.type === 'task.queued' && event.data.rateLimited === true;

describe('a 429 drawn by one tenant', () => {
  it("holds that tenant's calls of that model, never another tenant's or another model's", async () => {
    // Retry-After: 30 s, every time, for the hostile tenant's prompts.
    const limited = await submit(
      HOSTILE,
      Array.from({ length: 3 }, (_, index) => ({ prompt: `LIMITED 30 (${index})`, agent: 'casual', model: 'held' })),
    );
    await Promise.all(limited.map((id) => waitForEventWhere(fleet.baseUrl, id, isRateLimitedWait, auth(HOSTILE))));
    const started = Date.now();
    const victims = await submit(
      VICTIM,
      Array.from({ length: 3 }, (_, index) => ({ prompt: `fine ${index}`, agent: 'casual', model: 'held' })),
    );
    const [otherModel] = await submit(HOSTILE, [{ prompt: 'fine, on another model', agent: 'casual' }]);
    const streams = await Promise.all(victims.map((id) => waitForEnd(fleet.baseUrl, id, auth(VICTIM))));
    await waitForEnd(fleet.baseUrl, otherModel!, auth(HOSTILE));
    const waitedMs = Date.now() - started;
    const tasks = await Promise.all(victims.map((id) => taskOf(VICTIM, id)));
    expect(tasks.map((task) => [task.status, task.result])).toEqual(victims.map(() => ['completed', 'served']));
    expect(await taskOf(HOSTILE, otherModel!)).toMatchObject({ status: 'completed', result: 'served' });
    // None waited for the hostile tenant's 429s, and none waited out its Retry-After.
    expect(streams.flat().filter((message) => isRateLimitedWait(message.data))).toEqual([]);
    expect(waitedMs).toBeLessThan(15_000);
    // The hostile tenant's held tasks wait out the Retry-After: none called again meanwhile (one that
    // heard of the hold before its first call did not call at all).
    const heldCalls = limited.map((_, index) => callsOf(`LIMITED 30 (${index})`));
    expect(heldCalls.every((count) => count <= 1)).toBe(true);
    console.log(`429s with Retry-After: 30 for one tenant: the other tenant's 3 tasks completed in ${waitedMs} ms`);
  }, 90_000);

  it('ends a task that draws a 429 every time after the bounded number of calls, saying what to change', async () => {
    const prompt = 'LIMITED 1 (attempts 1)';
    const [id] = await submit(HOSTILE, [{ prompt, agent: 'casual', retry: { attempts: 1 } }]);
    await waitForEnd(fleet.baseUrl, id!, auth(HOSTILE));
    const task = await taskOf(HOSTILE, id!);
    expect(task.status).toBe('failed');
    expect(task.error?.message).toMatch(
      /^The model m answered 429 \(rate limited\) 3 times in a row; .*models\.m\.limits.*retry\.attempts.*: The LLM endpoint .* answered 429/,
    );
    // The waits it was given, and the one 429 more that spent its only attempt.
    expect(callsOf(prompt)).toBe(RATE_LIMITED_WAITS + 1);
    console.log(`429s with Retry-After: 1 every time: the attempts: 1 task failed after ${callsOf(prompt)} calls`);
  }, 60_000);

  it('fails a task at once when the 429 says the quota is spent (billing)', async () => {
    const prompt = 'QUOTA';
    const [id] = await submit(HOSTILE, [{ prompt, agent: 'casual' }]);
    await waitForEnd(fleet.baseUrl, id!, auth(HOSTILE));
    const task = await taskOf(HOSTILE, id!);
    expect(task.status).toBe('failed');
    expect(task.error?.message).toMatch(
      /^The LLM endpoint .* answered 429 \(insufficient_quota: .*\): 429 You exceeded your current quota, please check your plan and billing details\.$/,
    );
    expect(callsOf(prompt)).toBe(1);
  }, 60_000);
});

/**
 * Budgets that stop work, through the real loop: a task's own (tokens), a planned task's shared by
 * every subtask (USD), and a tenant's daily limit (its submits answer 429, its running task stops
 * after its step). A model that never stops asking for tools shows that spending, not the model, ends
 * each run.
 */
import { afterEach, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import { ConfigError, loadConfig, tenantSpendingLimits } from '@agentq/config';
import type { DoubleRequest } from '@agentq/llm';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';
import { configFile, tenantsEnv } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const usage = { promptTokens: 1_000, completionTokens: 100 };
const PRICES = configFile({ models: { 'test-model': { price: { input: 2, output: 10 } } } });
/** One call at those prices. */
const CALL_USD = (1_000 * 2 + 100 * 10) / 1e6;
const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
/** A model that always asks for one more tool call. */
const endless = { reply: { toolCalls: [{ name: 'list_files', arguments: {} }], usage } };

async function submit(body: unknown, key?: string): Promise<Response> {
  return fetch(`${stack!.api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
}

async function task(id: string, key?: string): Promise<TaskView> {
  const response = await fetch(
    `${stack!.api.url}/v1/tasks/${id}`,
    key ? { headers: { authorization: `Bearer ${key}` } } : {},
  );
  return (await response.json()) as TaskView;
}

it('stops a task once its token budget is spent, or before a call whose prompt alone would pass it, and shows what it spent', async () => {
  stack = await startStack({ pools: ['file'], rules: [endless] });
  const response = await submit({ tasks: [{ prompt: 'loop', agent: 'file', budget: { tokens: 2_500 } }] });
  expect(response.status).toBe(202);
  const [{ id }] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  await waitForEnd(stack.api.url, id);
  const view = await task(id);
  expect(view.status).toBe('failed');
  // 2 calls of 1,100 tokens leave 300, and the third call's prompt alone (the system prompt, the tools'
  // schemas, the context) holds more: it is not made. Checked by what was used alone, it was, and the
  // task ended at 3,300.
  expect(view.error).toEqual({
    code: 'budget',
    message: expect.stringMatching(
      /^Stopped: the task used 2200 tokens of its budget of 2500, and its next call's prompt alone holds \d+ more\.$/,
    ),
  });
  expect(stack.double.requests).toHaveLength(2);
  expect(view.budget).toEqual({ usd: null, tokens: 2_500, spentUsd: 0, spentTokens: 2_200, spent: false });
});

it('shares a planned task’s budget among its subtasks: each stops, the one that needs them is skipped, the root fails with what was done', async () => {
  const plan = [
    { id: '1', agent: 'file', task: 'list forever', need: [] },
    { id: '2', agent: 'casual', task: 'answer', need: [] },
    { id: '3', agent: 'file', task: 'list again', need: ['2'] },
    { id: '4', agent: 'casual', task: 'sum up', need: ['1'] },
  ];
  stack = await startStack({
    env: { AGENTQ_CONFIG: PRICES },
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\``, usage },
      },
      { match: (request) => promptOf(request).startsWith('answer'), reply: { content: 'the answer', usage } },
      { match: (request) => promptOf(request).startsWith('list'), ...endless },
    ],
  });
  const budgetUsd = 20 * CALL_USD;
  const response = await submit({ tasks: [{ prompt: 'big job', budget: { usd: budgetUsd } }] });
  const [{ id }] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  await waitForEnd(stack.api.url, id);
  const root = await task(id);
  expect(root.status).toBe('failed');
  expect(root.error?.code).toBe('budget');
  expect(root.error?.message).toMatch(/1 of 4 steps completed/);
  expect(root.result).toContain('the answer');
  const children = new Map(root.children!.map((child) => [child.planId, child.status]));
  expect(Object.fromEntries(children)).toEqual({ '1': 'failed', '2': 'completed', '3': 'failed', '4': 'skipped' });
  for (const planId of ['1', '3']) {
    const child = await task(root.children!.find((entry) => entry.planId === planId)!.id);
    expect(child.error?.code).toBe('budget');
  }
  // Spent: at least the budget; past it by at most the calls under way when it was reached (one per running subtask).
  expect(root.budget!.spent).toBe(true);
  expect(root.budget!.spentUsd).toBeGreaterThanOrEqual(budgetUsd - 1e-9);
  expect(root.budget!.spentUsd).toBeLessThanOrEqual(budgetUsd + 2 * CALL_USD + 1e-9);
  expect(root.budget!.spentUsd).toBeCloseTo(stack.double.requests.length * CALL_USD, 9);
  expect(root.totalCostUsd).toBeCloseTo(root.budget!.spentUsd, 9);
  // No final answer was asked for: every request was the plan's or a subtask's.
  expect(stack.double.requests.filter((request) => system(request).includes('final answer'))).toHaveLength(0);
});

it("refuses a tenant's submits past its daily limit (429 until midnight UTC), stops its running task after its step, and leaves other tenants alone", async () => {
  stack = await startStack({
    pools: ['file'],
    rules: [endless],
    env: tenantsEnv({ acme: { keys: ['key-a'], limits: { tokensPerDay: 2_000 } }, beta: { keys: ['key-b'] } }),
  });
  const first = await submit({ tasks: [{ prompt: 'loop', agent: 'file' }] }, 'key-a');
  expect(first.status).toBe(202);
  const [{ id }] = ((await first.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  await waitForEnd(stack.api.url, id, { authorization: 'Bearer key-a' });
  const stopped = await task(id, 'key-a');
  expect(stopped.status).toBe('failed');
  expect(stopped.error).toEqual({
    code: 'budget',
    message: expect.stringContaining('tenant acme reached its daily spending limit'),
  });
  expect(stack.double.requests).toHaveLength(2);

  const refused = await submit({ tasks: [{ prompt: 'more', agent: 'file' }] }, 'key-a');
  expect(refused.status).toBe(429);
  const midnight = new Date();
  midnight.setUTCHours(24, 0, 0, 0);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(Math.abs(Date.now() / 1000 + retryAfter - midnight.getTime() / 1000)).toBeLessThan(5);
  const body = (await refused.json()) as {
    error: { code: string; message: string; details: { resetsAt: string; spent: { tokens: number } } };
  };
  expect(body.error.code).toBe('limit_reached');
  expect(body.error.message).toMatch(/Tenant acme reached its daily limit .* Nothing was submitted/);
  expect(body.error.details).toMatchObject({ resetsAt: midnight.toISOString(), spent: { tokens: 2_200 } });
  // Every other way of creating work is refused the same way: a retry, a bulk retry, a fork.
  const post = (path: string, body: unknown) =>
    fetch(`${stack!.api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer key-a' },
      body: JSON.stringify(body),
    });
  for (const [path, body, done] of [
    [`/v1/tasks/${id}/retry`, undefined, 'retried'],
    ['/v1/tasks/bulk', { action: 'retry', status: 'failed' }, 'retried'],
    [`/v1/tasks/${id}/fork`, { fromStep: 1 }, 'forked'],
  ] as const) {
    const again = await post(path, body);
    expect(again.status, path).toBe(429);
    expect(((await again.json()) as { error: { message: string } }).error.message).toMatch(
      new RegExp(`^Tenant acme reached its daily limit .* Nothing was ${done}`),
    );
  }
  const listed = (await (
    await fetch(`${stack.api.url}/v1/tasks`, { headers: { authorization: 'Bearer key-a' } })
  ).json()) as { tasks: unknown[] };
  expect(listed.tasks).toHaveLength(1);

  expect(
    (await submit({ tasks: [{ prompt: 'beta works', agent: 'file', budget: { tokens: 1 } }] }, 'key-b')).status,
  ).toBe(202);
});

it('refuses a budget or a tenant limit it cannot use, saying what to fix', async () => {
  stack = await startStack({ pools: [] });
  for (const budget of [{}, { usd: 0 }, { tokens: 1.5 }, { usd: -1 }, { dollars: 1 }]) {
    const response = await submit({ tasks: [{ prompt: 'x', budget }] });
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/budget/);
  }
  const config = (tenants: unknown) => loadConfig({ env: { AGENTQ_CONFIG: configFile({ tenants }) } });
  const load = (tenants: unknown) => () => config(tenants);
  expect(load({ acme: { limits: { usdPerDay: 0 } } })).toThrow(ConfigError);
  expect(load({ acme: { limits: { usdPerDay: 0 } } })).toThrow(/tenants\.acme\.limits\.usdPerDay: /);
  expect(load({ 'a b': { limits: { usdPerDay: 1 } } })).toThrow(/not a tenant name/);
  expect(load({ acme: { limits: { usdPerDay: 1, perHour: 2 } } })).toThrow(/unknown key "perHour"/);
  expect(tenantSpendingLimits(config({ '*': { limits: { usdPerDay: 2.5 } } }))).toEqual({
    '*': { microUsd: 2_500_000 },
  });
  expect(() => loadConfig({ env: { AGENTQ_TENANT_LIMITS: '{}' } })).toThrow(
    /AGENTQ_TENANT_LIMITS: now tenants\.<tenant or \*>\.limits\.tokensPerDay and usdPerDay/,
  );
});

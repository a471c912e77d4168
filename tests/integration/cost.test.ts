/**
 * What tasks cost: each model call priced from the configuration file's `models` (cached prompt tokens at their price), in
 * its event, added up in the task, and for a planned task with every subtask; a model without a price
 * costs nothing; a bad price table stops the process with a message that says what to fix.
 */
import { afterEach, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { ConfigError, loadConfig, modelPrices } from '@agentq/config';
import type { DoubleRequest } from '@agentq/llm';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const PRICES = configFile({ models: { 'test-model': { price: { input: 2, cachedInput: 1, output: 10 } } } });
const usage = { promptTokens: 1_000, cachedPromptTokens: 400, completionTokens: 100 };
/** One call at those prices: 600 fresh and 400 cached prompt tokens, 100 out. */
const CALL_USD = (600 * 2 + 400 * 1 + 100 * 10) / 1e6;
const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');

async function eventsOf(taskId: string): Promise<TaskEvent[]> {
  return (
    await fetch(`${stack!.api.url}/v1/tasks/${taskId}/events`, { headers: { accept: 'application/json' } })
  ).json() as Promise<TaskEvent[]>;
}

it('prices each model call, and adds them up per task and per planned task', async () => {
  const plan = [
    { id: '1', agent: 'file', task: 'write it', need: [] },
    { id: '2', agent: 'casual', task: 'say it', need: ['1'] },
  ];
  stack = await startStack({
    env: { AGENTQ_CONFIG: PRICES },
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: { content: `\`\`\`json\n${JSON.stringify({ plan })}\n\`\`\``, usage },
      },
      {
        match: (request) => promptOf(request).startsWith('write it') && toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }], usage },
      },
      { reply: { content: 'done', usage } },
    ],
  });
  const [single] = await stack.submit([{ prompt: 'write it', agent: 'file' }]);
  await waitForEnd(stack.api.url, single!);
  const task = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${single}`)).body;
  expect(task.costUsd).toBeCloseTo(2 * CALL_USD, 9);
  const responses = (await eventsOf(single!)).filter((event) => event.type === 'llm.response');
  expect(responses.map((event) => (event.data as { costUsd?: number }).costUsd)).toEqual([
    expect.closeTo(CALL_USD, 9),
    expect.closeTo(CALL_USD, 9),
  ]);

  // A planned task: the plan, two subtasks (two calls and one), the final answer.
  const [root] = await stack.submit([{ prompt: 'plan it' }]);
  await waitForEnd(stack.api.url, root!);
  const planned = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${root}`)).body;
  expect(planned.status).toBe('completed');
  expect(planned.costUsd).toBeCloseTo(2 * CALL_USD, 9);
  expect(planned.totalCostUsd).toBeCloseTo(5 * CALL_USD, 9);
});

it('costs nothing for a model without a price, and says so in no event', async () => {
  stack = await startStack({ pools: ['casual'], rules: [{ reply: { content: 'done', usage } }] });
  const [id] = await stack.submit([{ prompt: 'hello', agent: 'casual' }]);
  await waitForEnd(stack.api.url, id!);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body.costUsd).toBe(0);
  expect((await eventsOf(id!)).find((event) => event.type === 'llm.response')!.data).not.toHaveProperty('costUsd');
});

it('refuses a price table it cannot use, saying what is wrong', () => {
  const load = (price: unknown) => () =>
    loadConfig({ env: { AGENTQ_CONFIG: configFile({ models: { m: { price } } }) } });
  expect(load({ input: 1 })).toThrow(ConfigError);
  expect(load({ input: 1 })).toThrow(/models\.m\.price\.output: /);
  expect(load({ input: -1, output: 1 })).toThrow(/models\.m\.price\.input: /);
  expect(load({ input: 1, output: 2, tip: 3 })).toThrow(/models\.m\.price: unknown key "tip"/);
  expect(() => loadConfig({ env: { AGENTQ_PRICES: '{"m": {"input": 1, "output": 2}}' } })).toThrow(
    /AGENTQ_PRICES: now models\.<model>\.price in the configuration file/,
  );
  expect(
    modelPrices(
      loadConfig({ env: { AGENTQ_CONFIG: configFile({ models: { m: { price: { input: 1, output: 2 } } } }) } }),
    ),
  ).toEqual({
    m: { input: 1, output: 2 },
  });
});

/**
 * A provider's own word on its limits, with shared limits configured: a 429 with Retry-After, or
 * x-ratelimit headers saying nothing is left, hold every task's next call until then (the task waits
 * with its job delayed, it does not fail and the pool does not pause). And the config says what is wrong.
 */
import { afterEach, expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { ConfigError, loadConfig, modelLimits } from '@agentq/config';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const LIMITS = configFile({ models: { 'test-model': { limits: { rpm: 1_000, tpm: 1_000_000 } } } });

async function runThree(): Promise<TaskEvent[][]> {
  const ids = await stack!.submit([1, 2, 3].map((index) => ({ prompt: `say ${index}`, agent: 'casual' })));
  return (await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)))).map((stream) =>
    stream.map((message) => message.data),
  );
}

// One tenant's tasks (a 429 holds its tenant's calls of the model only: tests/security/model-429s.test.ts).
it("holds every task's calls for a 429's Retry-After, then completes them all", async () => {
  stack = await startStack({
    pools: ['casual'],
    env: { AGENTQ_CONFIG: LIMITS, AGENTQ_CONCURRENCY: '1' },
    rules: [
      { times: 1, reply: { error: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } } } },
      { reply: { content: 'done' } },
    ],
  });
  const streams = await runThree();
  expect(streams.map((events) => events.at(-1)!.type)).toEqual(['task.completed', 'task.completed', 'task.completed']);
  const [refused, ...after] = stack.double.receivedAt;
  expect(after).toHaveLength(3);
  for (const time of after) expect(time).toBeGreaterThanOrEqual(refused! + 1_000 - 20);
  const waits = streams.flat().filter((event) => event.type === 'task.queued' && event.data.rateLimited);
  expect(waits[0]?.data).toMatchObject({
    reason: expect.stringContaining('to take calls again after a 429'),
    notBefore: expect.any(String),
  });
  // Nothing failed and no attempt was used: each task started and completed in the one job.
  expect(streams.flat().filter((event) => event.type === 'task.failed')).toHaveLength(0);
});

it('holds the next calls until the reset an answer’s x-ratelimit headers name when nothing is left', async () => {
  stack = await startStack({
    pools: ['casual'],
    env: { AGENTQ_CONFIG: LIMITS, AGENTQ_CONCURRENCY: '1' },
    rules: [
      {
        times: 1,
        reply: {
          content: 'done',
          headers: {
            'x-ratelimit-remaining-requests': '0',
            'x-ratelimit-reset-requests': '1s',
            'x-ratelimit-remaining-tokens': '90000',
          },
        },
      },
      { reply: { content: 'done' } },
    ],
  });
  const streams = await runThree();
  expect(streams.map((events) => events.at(-1)!.type)).toEqual(['task.completed', 'task.completed', 'task.completed']);
  const [first, ...after] = stack.double.receivedAt;
  for (const time of after) expect(time).toBeGreaterThanOrEqual(first! + 1_000 - 20);
});

it('refuses limits it cannot use, saying what to fix', () => {
  const config = (limits: unknown) => loadConfig({ env: { AGENTQ_CONFIG: configFile({ models: { m: { limits } } }) } });
  const load = (limits: unknown) => () => config(limits);
  expect(load({})).toThrow(ConfigError);
  expect(load({})).toThrow(/models\.m\.limits: needs "rpm", "tpm"/);
  expect(load({ rpm: 10, perSeconds: 5 })).toThrow(/not both/);
  expect(load({ tpm: -5 })).toThrow(/models\.m\.limits\.tpm: /);
  expect(load({ rpm: 10, burst: 5 })).toThrow(/unknown key "burst"/);
  expect(modelLimits(config({ rpm: 500, tpm: 200000 }))).toEqual({
    m: { requests: 500, tokens: 200_000, windowMs: 60_000 },
  });
  expect(modelLimits(config({ tokens: 5000, perSeconds: 10 }))).toEqual({
    m: { tokens: 5_000, windowMs: 10_000 },
  });
  expect(() => loadConfig({ env: { AGENTQ_LIMITS: '{}' } })).toThrow(/AGENTQ_LIMITS: now models\.<model>\.limits/);
});

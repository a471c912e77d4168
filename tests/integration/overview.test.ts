/** The dashboard's overview: what it says of the newest ended tasks, and what it reads for it. */
import type { OverviewView } from '@agentq/contract';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const LONG_RESULT = 'x'.repeat(200_000);

it("summarises the newest ended tasks from their small fields, never reading a task's result", async () => {
  stack = await startStack({
    pools: ['casual'],
    rules: [
      {
        match: (request: DoubleRequest) => JSON.stringify(request.messages).includes('refuse me'),
        reply: { error: { status: 400, message: 'refused by the model' } },
      },
      { reply: { content: LONG_RESULT, usage: { promptTokens: 10, completionTokens: 20 } } },
    ],
  });
  const ids = await stack.submit([
    { prompt: 'a long answer', agent: 'casual' },
    { prompt: 'another long answer', agent: 'casual' },
    { prompt: 'refuse me', agent: 'casual' },
  ]);
  await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));

  // Every command Redis runs on this stack's keys while the overview is read.
  const prefix = stack.config.AGENTQ_REDIS_PREFIX;
  const monitor = await new Redis(stack.config.REDIS_URL).monitor();
  const commands: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((arg) => String(arg).startsWith(prefix) && String(arg).includes(':task:')))
      commands.push(args.map(String));
  });
  try {
    const { body } = await getJson<OverviewView>(`${stack.api.url}/v1/overview`);
    expect(body.sample.size).toBe(3);
    expect(body.sample.models).toEqual([
      expect.objectContaining({ model: 'test-model', tasks: 3, promptTokens: 20, completionTokens: 40 }),
    ]);
    expect(body.sample.failures).toEqual([
      { code: 'error', count: 1, example: { id: ids[2], message: expect.stringContaining('refused by the model') } },
    ]);
    expect(body.sample.slowest.map((task) => task.prompt).sort()).toEqual([
      'a long answer',
      'another long answer',
      'refuse me',
    ]);
    // The overview's reads: an HMGET of its table's fields per task (a worker's late write to a task may
    // land in the window too: its script's HMGET reads other fields).
    const overviewReads = () => commands.filter(([name, , first]) => name!.toLowerCase() === 'hmget' && first === 'id');
    await expect.poll(() => overviewReads().length).toBe(3);
    // Each record is read by its summary's fields: a 200 KB result is never sent.
    expect(commands.filter(([name]) => name!.toLowerCase() === 'hgetall')).toEqual([]);
    expect(commands.filter(([name]) => name!.toLowerCase() === 'hmget').every((args) => !args.includes('result'))).toBe(
      true,
    );
  } finally {
    monitor.disconnect();
  }
});

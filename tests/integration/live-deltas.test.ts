/**
 * A model's answer as it forms, through the real worker, Redis and API: `llm.delta` events reach a
 * follower before the `llm.response` they add up to, live only (the stored log has none and no gap),
 * coalesced (about 20 a second at most), by default; an agent that does not stream sends none. Prints the time from
 * the model's first token to the follower's first delta.
 */
import { createClient, isLiveDelta, type StreamedEvent } from '@agentq/client';
import type { TaskEvent } from '@agentq/contract';
import { afterEach, expect, it } from 'vitest';
import { configFile } from '../helpers/config-file.js';
import { startStack, type Stack } from '../helpers/stack.js';

const ANSWER = 'The answer forms word by word: '.concat('more words, '.repeat(40));
let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

/** Every event a follower sees, with when it saw it. */
async function follow(taskId: string): Promise<Array<{ event: StreamedEvent; at: number }>> {
  const seen: Array<{ event: StreamedEvent; at: number }> = [];
  for await (const event of createClient({ baseUrl: stack!.api.url }).events(taskId))
    seen.push({ event, at: Date.now() });
  return seen;
}

/** An agent that streams (the default), and one that does not (`stream: false`). */
const agents = () =>
  configFile({
    agents: {
      talker: { description: 'answers as it thinks', instructions: 'Answer.', tools: [] },
      quiet: { description: 'answers whole', instructions: 'Answer.', tools: [], stream: false },
    },
  });

it('streams the answer as llm.delta events before its llm.response, and stores none of them', async () => {
  stack = await startStack({
    rules: [{ reply: { content: ANSWER, chunkDelayMs: 20 } }],
    env: { AGENTQ_CONFIG: agents() },
  });
  const [taskId] = await stack.submit([{ prompt: 'say it slowly', agent: 'talker' }]);
  const seen = await follow(taskId!);
  const deltas = seen.filter(({ event }) => isLiveDelta(event));
  const response = seen.findIndex(({ event }) => event.type === 'llm.response');
  expect(deltas.length).toBeGreaterThan(1);
  // Every delta came before the answer, each the next part of it (what is left when it is whole comes with it).
  expect(seen.findLastIndex(({ event }) => isLiveDelta(event))).toBeLessThan(response);
  const formed = deltas.map(({ event }) => (isLiveDelta(event) ? (event.data.text ?? '') : '')).join('');
  expect(ANSWER.startsWith(formed)).toBe(true);
  expect(formed.length).toBeGreaterThan(ANSWER.length / 2);
  // Coalesced: never two within much less than 50 ms of each other.
  const gaps = deltas.slice(1).map((delta, index) => delta.at - deltas[index]!.at);
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(25);

  const stored = (await (
    await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`, { headers: { accept: 'application/json' } })
  ).json()) as TaskEvent[];
  expect(stored.map((event) => event.type)).not.toContain('llm.delta');
  expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
  expect(seen.filter(({ event }) => !isLiveDelta(event)).map(({ event }) => (event as TaskEvent).seq)).toEqual(
    stored.map((event) => event.seq),
  );
  const firstToken = stack.double.firstTokenAt[0]!;
  console.log(
    `live deltas: first token to the follower's first delta ${deltas[0]!.at - firstToken} ms; ${deltas.length} deltas`,
  );
  expect(deltas[0]!.at - firstToken).toBeLessThan(1_000);
});

it('sends no delta for an agent that does not stream', async () => {
  stack = await startStack({
    rules: [{ reply: { content: ANSWER, chunkDelayMs: 20 } }],
    env: { AGENTQ_CONFIG: agents() },
  });
  const [taskId] = await stack.submit([{ prompt: 'say it', agent: 'quiet' }]);
  const seen = await follow(taskId!);
  expect(seen.some(({ event }) => isLiveDelta(event))).toBe(false);
  expect(seen.at(-1)!.event.type).toBe('task.completed');
  expect(stack.double.requests.every((request) => !request.stream)).toBe(true);
});

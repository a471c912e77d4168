/**
 * A model's large answer goes through the loop whole: a 30 MiB write_file is written (it failed its task
 * with "Maximum call stack size exceeded", after three paid attempts, when tokens were counted with a
 * regular expression over its one 30 MiB run).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

it('writes a 30 MiB file a model asked for in one call, with one model call a step', async () => {
  const size = 30 * 1024 * 1024;
  stack = await startStack({
    pools: ['file'],
    rules: [
      {
        match: (request) => !request.messages.some((message) => message.role === 'tool'),
        reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'big.txt', content: 'x'.repeat(size) } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  const [id] = await stack.submit([{ prompt: 'write it', agent: 'file' }]);
  await waitForEnd(stack.api.url, id!);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body).toMatchObject({
    status: 'completed',
    result: 'done',
    steps: 2,
  });
  expect((await stat(path.join(stack.dataDir, 'work', id!, 'big.txt'))).size).toBe(size);
  expect(stack.double.requests).toHaveLength(2);
  // Its events keep a preview and the length: the whole is in its messages and its work directory.
  const response = await fetch(`${stack.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } });
  const text = await response.text();
  expect(text.length).toBeLessThan(200_000);
  const events = JSON.parse(text) as TaskEvent[];
  const call = events.find((event) => event.type === 'tool.call')!;
  expect(call.data).toMatchObject({
    name: 'write_file',
    argumentsLength: JSON.stringify({ path: 'big.txt', content: 'x'.repeat(size) }).length,
  });
  expect((call.data as { arguments: string }).arguments).toMatch(
    /^\{"path":"big\.txt","content":"x{100}[\s\S]*…\[\d+ characters left out of this event; \d+ in all\]…\nx{100}/,
  );
  const answer = events.find((event) => event.type === 'llm.response')!;
  expect((answer.data as { toolCalls: Array<{ argumentsLength?: number }> }).toolCalls[0]!.argumentsLength).toBe(
    (call.data as { argumentsLength: number }).argumentsLength,
  );
}, 120_000);

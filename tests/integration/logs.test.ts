/**
 * The log lines of what happens to a task beyond its start and end, in process (the API's and the
 * worker's lines into one capture): a retry after a model error, a pause for the user, the shutdown
 * steps, and prompts in the lines only when AGENTQ_LOG_PROMPTS asks for them.
 */
import { Writable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '@agentq/telemetry';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

type Line = Record<string, unknown> & { msg: string; level: string };

function capture(): { logger: ReturnType<typeof createLogger>; lines: Line[] } {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Line);
      done();
    },
  });
  return { logger: createLogger({ name: 'agentq-test', level: 'info', format: 'json', destination }), lines };
}

it('logs a retry with its attempt, a pause for the user, and prompts only when asked to', async () => {
  const { logger, lines } = capture();
  stack = await startStack({
    pools: ['casual'],
    logger,
    env: { AGENTQ_LOG_PROMPTS: '1' },
    rules: [
      // The first answer is broken (no SDK retries here): the job is tried again.
      { times: 1, reply: { fault: 'not-json' } },
      {
        match: (request) => JSON.stringify(request.messages).includes('ask me'),
        reply: { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which colour?' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
  const [retried] = await stack.submit([{ prompt: 'a prompt worth logging', agent: 'casual' }]);
  await waitForEnd(stack.api.url, retried!);
  const requeued = lines.find((line) => line.msg === 'task requeued');
  expect(requeued).toMatchObject({
    level: 'warn',
    taskId: retried,
    agent: 'casual',
    reason: 'retry',
    attempt: 2,
    detail: expect.stringContaining('sent a broken answer'),
  });
  const starts = lines.filter((line) => line.msg === 'task started' && line.taskId === retried);
  expect(starts.map((line) => line.attempt)).toEqual([1, 2]);
  expect(starts[0]).toMatchObject({ prompt: 'a prompt worth logging' });
  // Its end reaches a follower and the worker's log by different connections: either may come first.
  await expect
    .poll(() => lines.find((line) => line.msg === 'task ended' && line.taskId === retried))
    .toMatchObject({ status: 'completed', steps: 1 });

  const [asking] = await stack.submit([{ prompt: 'ask me something', agent: 'casual' }]);
  await expect
    .poll(() => lines.find((line) => line.msg === 'task paused: waiting for its user' && line.taskId === asking))
    .toMatchObject({ level: 'info', agent: 'casual', steps: 1 });

  await stack.close();
  stack = undefined;
  const shutdown = lines
    .filter((line) => line.name === 'agentq-test' && /^(stopping|stopped|grace)/.test(line.msg))
    .map((line) => line.msg);
  expect(shutdown[0]).toMatch(/^stopping: no new jobs/);
  expect(shutdown.at(-1)).toBe('stopped');
});

it('keeps prompts out of the lines by default', async () => {
  const { logger, lines } = capture();
  stack = await startStack({ pools: ['casual'], logger, rules: [{ reply: { content: 'done' } }] });
  const [id] = await stack.submit([{ prompt: 'a private prompt', agent: 'casual' }]);
  await waitForEnd(stack.api.url, id!);
  await expect
    .poll(() => lines.find((line) => line.msg === 'task ended' && line.taskId === id))
    .toMatchObject({ status: 'completed' });
  expect(JSON.stringify(lines)).not.toContain('a private prompt');
});

/** Loop behaviours seen from the API: asking the user, the fences protocol per pool, a 429 waited out. */
import type { TaskView } from '@agentq/contract';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { closeQueues, createAgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys } from '@agentq/store';
import { readSse, waitForEnd, waitForEvent } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const hasToolResult = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');

describe('a task that asks its user', () => {
  const askingRules = [
    {
      match: (request: DoubleRequest) => !hasToolResult(request),
      reply: { toolCalls: [{ id: 'ask1', name: 'ask_user', arguments: { question: 'Which city?' } }] },
    },
    {
      reply: (request: DoubleRequest) => ({
        content: `Weather for ${String(request.messages.at(-1)?.content).replace('The user answered: ', '')}`,
      }),
    },
  ];

  it('waits with its question, and resumes with the answer posted to /input', async () => {
    stack = await startStack({ rules: askingRules });
    const [taskId] = await stack.submit([{ prompt: 'weather please', agent: 'casual' }]);
    await waitForEvent(stack.api.url, taskId!, 'task.waiting');
    const waiting = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(waiting.body).toMatchObject({ status: 'waiting', question: 'Which city?' });

    expect((await post(`${stack.api.url}/v1/tasks/${taskId}/input`, { text: '' })).status).toBe(400);
    const answered = await post(`${stack.api.url}/v1/tasks/${taskId}/input`, { text: 'Lisbon' });
    expect(answered.status).toBe(202);
    const events = await waitForEnd(stack.api.url, taskId!);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body).toMatchObject({
      status: 'completed',
      result: 'Weather for Lisbon',
      question: null,
    });
    expect(stack.double.requests.at(-1)!.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'ask1',
      content: 'The user answered: Lisbon',
    });
    expect(events.map((event) => event.data.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => event.event)).toContain('task.waiting');

    const again = await post(`${stack.api.url}/v1/tasks/${taskId}/input`, { text: 'Porto' });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { message: string } }).error.message).toMatch(
      /is completed, not waiting for an answer/,
    );
  });

  it('can be cancelled while it waits', async () => {
    stack = await startStack({ rules: askingRules });
    const [taskId] = await stack.submit([{ prompt: 'weather please', agent: 'casual' }]);
    await waitForEvent(stack.api.url, taskId!, 'task.waiting');
    expect((await post(`${stack.api.url}/v1/tasks/${taskId}/cancel`, {})).status).toBe(202);
    const events = await readSse(`${stack.api.url}/v1/tasks/${taskId}/events`);
    expect(events.at(-1)!.event).toBe('task.cancelled');
  });
});

describe('the fences protocol, chosen per pool', () => {
  it('teaches the tags in the system prompt, offers no native tools, and runs the blocks', async () => {
    stack = await startStack({
      env: {
        AGENTQ_CONFIG: configFile({
          agents: {
            coder: {
              description: 'writes and runs code',
              instructions: 'You are a coding agent working on one task inside a private work directory.',
              tools: ['bash', 'python', 'node', 'read_file', 'write_file', 'edit_file', 'list_files'],
              protocol: 'fences',
            },
          },
        }),
      },
      rules: [
        {
          match: (request) => request.messages.length === 2,
          reply: {
            content:
              'Writing it:\n```python:fib.py\na, b = 0, 1\nfor _ in range(10):\n    a, b = b, a + b\nprint(a)\n```\n```bash\nls\n```',
          },
        },
        {
          reply: (request) => ({
            content: `fib(10) = ${String(request.messages.at(-1)?.content).match(/\n(\d+)\n/)?.[1]}`,
          }),
        },
      ],
    });
    const [coderTask] = await stack.submit([{ prompt: 'compute fib(10)', agent: 'coder' }]);
    await waitForEnd(stack.api.url, coderTask!);
    const task = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${coderTask}`)).body;
    expect(task).toMatchObject({ status: 'completed', result: 'fib(10) = 55' });
    expect(readFileSync(path.join(stack.dataDir, 'work', coderTask!, 'fib.py'), 'utf8')).toMatch(/^a, b = 0, 1/);
    const [first, second] = stack.double.requests;
    expect(first!.tools).toBeUndefined();
    expect(first!.messages[0]!.content).toMatch(/## How to use tools[\s\S]*- ```python \(or ```py, ```python3\)/);
    expect(second!.messages.at(-1)).toEqual({
      role: 'user',
      content:
        '[success] block 1 (```python:fib.py):\n(saved as fib.py)\n55\n\n[success] block 2 (```bash):\nfib.py\n\nAll blocks ran.',
    });
  });
});

describe('rate limits', () => {
  it('a 429 that outlasts the retries is waited out for its Retry-After, without spending an attempt', async () => {
    stack = await startStack({
      env: { AGENTQ_LLM_MAX_RETRIES: '0', AGENTQ_CONCURRENCY: '1' },
      pools: ['casual'],
      rules: [
        { times: 1, reply: { error: { status: 429, message: 'Rate limit reached', headers: { 'retry-after': '2' } } } },
        { reply: { content: 'answered' } },
      ],
    });
    const ids = await stack.submit([{ prompt: 'one', agent: 'casual' }]);
    const ends = await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
    expect(ends.map((events) => events.at(-1)!.event)).toEqual(['task.completed']);
    // Both runs were its first attempt.
    const attempts = ends
      .flat()
      .map((event) => event.data)
      .flatMap((event) => (event.type === 'task.started' ? [event.data.attempt] : []));
    expect(attempts).toEqual([1, 1]);
    const limited = ends
      .flat()
      .map((event) => event.data)
      .find((event) => event.type === 'task.queued' && event.data.rateLimited);
    expect(limited?.type === 'task.queued' && limited.data.reason).toMatch(/429/);
    // Nothing reached the endpoint before the Retry-After was over.
    expect(stack.double.receivedAt[1]! - stack.double.receivedAt[0]!).toBeGreaterThanOrEqual(1_900);
  });
});

describe('a cancelled task', () => {
  it('is not retried', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'slow', delayMs: 20_000 } }], pools: ['casual'] });
    const [taskId] = await stack.submit([{ prompt: 'long', agent: 'casual' }]);
    await waitForEvent(stack.api.url, taskId!, 'llm.request');
    await post(`${stack.api.url}/v1/tasks/${taskId}/cancel`, {});
    await waitForEnd(stack.api.url, taskId!);
    const queues = createAgentQueues({
      pools: ['planner', 'coder', 'file', 'casual', 'web'],
      connection: connectRedis({ url: stack.config.REDIS_URL }),
      keys: createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
    });
    const job = await queues.of(taskId!).queue('casual').getJob(taskId!);
    expect(job ? await job.getState() : 'removed').toMatch(/completed|removed/);
    expect(job?.attemptsMade ?? 0).toBeLessThanOrEqual(1);
    await closeQueues(queues);
    expect(stack.double.requests).toHaveLength(1);
  });
});

describe('the jail', () => {
  it("runs a task's tools jailed in its work directory by default", async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => !hasToolResult(request),
          reply: {
            toolCalls: [{ name: 'bash', arguments: { command: 'echo jailed > proof.txt; ls /home 2>&1; ls ..' } }],
          },
        },
        { reply: (request) => ({ content: String(request.messages.at(-1)!.content) }) },
      ],
    });
    const [taskId] = await stack.submit([{ prompt: 'prove it', agent: 'coder' }]);
    await waitForEnd(stack.api.url, taskId!);
    const task = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body;
    expect(task.status).toBe('completed');
    expect(task.result).toBe(`ls: cannot access '/home': No such file or directory\n${taskId}`);
    expect(readFileSync(path.join(stack.dataDir, 'work', taskId!, 'proof.txt'), 'utf8')).toBe('jailed\n');
  });
});

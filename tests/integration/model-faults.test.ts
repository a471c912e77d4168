/**
 * The model's faults, injected on the wire: cut-off bodies, 200s that are not JSON, no choices, streams
 * without [DONE], endpoints that hang, and text that is not well-formed. None may lose a task.
 */
import type { TaskView } from '@agentq/contract';
import { afterEach, describe, expect, it } from 'vitest';
import type { DoubleFault, DoubleReply, DoubleRequest } from '@agentq/llm';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { seeded } from '../helpers/seeded.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

describe('faults of the model endpoint', () => {
  it('100 two-step tasks complete through 20% injected faults, hangs and cut-off bodies included', async () => {
    const random = seeded(20261130);
    const faults: DoubleFault[] = ['truncated', 'not-json', 'no-choices', 'no-done', 'hang'];
    const injected = new Map<DoubleFault, number>();
    const answer = (request: DoubleRequest): DoubleReply =>
      toolResults(request) === 0
        ? { toolCalls: [{ name: 'write_file', arguments: { path: 'step.txt', content: 'one' } }] }
        : { content: `done: ${String(request.messages.find((message) => message.role === 'user')?.content)}` };
    stack = await startStack({
      pools: ['coder'],
      env: {
        AGENTQ_CONCURRENCY: '25',
        AGENTQ_LLM_TIMEOUT_MS: '400',
        AGENTQ_LLM_MAX_RETRIES: '4',
        AGENTQ_LLM_DEADLINE_MS: '60000',
      },
      rules: [
        {
          reply: (request) => {
            if (random() < 0.2) {
              const fault = faults[Math.floor(random() * faults.length)]!;
              injected.set(fault, (injected.get(fault) ?? 0) + 1);
              return { fault };
            }
            return answer(request);
          },
        },
      ],
    });
    const ids = await stack.submit(
      Array.from({ length: 100 }, (_, index) => ({ prompt: `task ${index}`, agent: 'coder' })),
    );
    await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
    const tasks = await Promise.all(
      ids.map(async (id) => (await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)).body),
    );
    expect(
      tasks.filter((task) => task.status !== 'completed').map((task) => [task.id, task.status, task.error]),
    ).toEqual([]);
    expect(tasks.map((task) => task.result)).toEqual(ids.map((_, index) => `done: task ${index}`));
    const total = [...injected.values()].reduce((sum, count) => sum + count, 0);
    expect(total).toBeGreaterThanOrEqual(30);
    expect([...injected.keys()].sort()).toEqual([...faults].sort());
    console.log(
      `model faults injected: ${total} (${[...injected].map(([fault, count]) => `${fault} ${count}`).join(', ')}); tasks completed: ${tasks.length}/100`,
    );
  }, 120_000);

  it('stores an answer with an unpaired surrogate instead of losing it', async () => {
    stack = await startStack({ pools: ['casual'], rules: [{ reply: { content: 'cut emoji \ud83d here' } }] });
    const [id] = await stack.submit([{ prompt: 'say it', agent: 'casual' }]);
    const events = await waitForEnd(stack.api.url, id!);
    const task = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body;
    expect(task).toMatchObject({ status: 'completed', result: 'cut emoji \ufffd here' });
    expect(events.map((event) => event.event)).not.toContain('task.failed');
    expect(stack.double.requests).toHaveLength(1);
  });

  it('refuses an answer past 64 MiB without reading it, as a broken answer, and the worker goes on', async () => {
    stack = await startStack({
      pools: ['casual'],
      rules: [{ reply: { fault: 'oversized' }, times: 1 }, { reply: { content: 'a normal answer' } }],
    });
    const [id] = await stack.submit([{ prompt: 'say a lot', agent: 'casual' }]);
    const events = await waitForEnd(stack.api.url, id!);
    // Tried again, as a broken answer is, with why.
    const retried = events.find(
      (event) => event.event === 'task.queued' && (event.data.data as { retry?: number }).retry === 2,
    );
    expect((retried!.data.data as { reason: string }).reason).toMatch(
      /sent a broken answer: the answer is larger than 64 MiB, more than any model's answer; it was not read/,
    );
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body).toMatchObject({
      status: 'completed',
      result: 'a normal answer',
    });
    expect(stack.double.requests).toHaveLength(2);
  });

  it('fails a task whose endpoint hangs within the deadline, naming the endpoint, not retried', async () => {
    stack = await startStack({
      pools: ['casual'],
      env: {
        AGENTQ_LLM_TIMEOUT_MS: '300',
        AGENTQ_LLM_DEADLINE_MS: '1000',
        AGENTQ_LLM_MAX_RETRIES: '10',
        OPENAI_API_KEY: 'sk-never-shown',
      },
      rules: [{ reply: { fault: 'hang' } }],
    });
    const started = Date.now();
    const [id] = await stack.submit([{ prompt: 'anyone there?', agent: 'casual' }]);
    await waitForEnd(stack.api.url, id!);
    expect(Date.now() - started).toBeLessThan(4_000);
    const task = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body;
    expect(task.status).toBe('failed');
    expect(task.error!.message).toContain(
      `${stack.double.baseURL} (model test-model) gave no usable answer within 1 s`,
    );
    expect(JSON.stringify(task)).not.toContain('sk-never-shown');
  });

  it('waits out an endpoint whose attempts time out, spending no attempt, and completes once it answers', async () => {
    stack = await startStack({
      pools: ['casual'],
      env: {
        AGENTQ_LLM_TIMEOUT_MS: '300',
        AGENTQ_LLM_DEADLINE_MS: '60000',
        AGENTQ_CONFIG: configFile({ models: { 'test-model': { outage: { maxBackoffSeconds: 1 } } } }),
      },
      rules: [{ reply: { fault: 'hang' }, times: 2 }, { reply: { content: 'answered at last' } }],
    });
    const [id] = await stack.submit([{ prompt: 'slow endpoint', agent: 'casual' }]);
    const events = (await waitForEnd(stack.api.url, id!)).map((message) => message.data);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body).toMatchObject({
      status: 'completed',
      result: 'answered at last',
    });
    const waits = events.filter((event) => event.type === 'task.queued' && event.data.modelUnreachable);
    expect(waits.length).toBe(2);
    expect(waits[0]!.type === 'task.queued' && waits[0]!.data.reason).toMatch(/The LLM request to .* timed out/);
    const attempts = events.flatMap((event) => (event.type === 'task.started' ? [event.data.attempt] : []));
    expect([...new Set(attempts)]).toEqual([1]);
  });
});

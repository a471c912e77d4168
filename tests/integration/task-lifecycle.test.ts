import { createSseReader, type TaskEvent, type TaskView } from '@agentq/contract';
import { existsSync, readFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { firstUserText, type DoubleRequest } from '@agentq/llm';
import { closeQueues, createAgentQueues } from '@agentq/scheduling';
import { connectRedis, createKeys, TaskStore } from '@agentq/store';
import { readSse, waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { processesMatching } from '../helpers/processes.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const toolResultCount = (request: DoubleRequest) =>
  request.messages.filter((message) => message.role === 'tool').length;

/** A model that writes a file named after the prompt, checks it with bash, then answers. */
const fileWritingRules = [
  {
    match: (request: DoubleRequest) => toolResultCount(request) === 0,
    reply: (request: DoubleRequest) => ({
      content: 'Writing the file.',
      toolCalls: [
        {
          name: 'write_file',
          arguments: { path: `out/${firstUserText(request)}.txt`, content: `made for ${firstUserText(request)}` },
        },
      ],
    }),
  },
  {
    match: (request: DoubleRequest) => toolResultCount(request) === 1,
    reply: { toolCalls: [{ name: 'bash', arguments: { command: 'cat out/*.txt' } }] },
  },
  { reply: (request: DoubleRequest) => ({ content: `Done: ${request.messages.at(-1)?.content}` }) },
];

describe('a task over HTTP, run by a real worker against the wire double', () => {
  it('completes, leaves its file in its own work directory, and streams every event in order', async () => {
    stack = await startStack({ rules: fileWritingRules });
    const [taskId] = await stack.submit([{ prompt: 'report', agent: 'coder', metadata: { batch: 'b1' } }]);
    const events = await waitForEnd(stack.api.url, taskId!);

    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(task).toMatchObject({
      id: taskId,
      status: 'completed',
      agent: 'coder',
      prompt: 'report',
      result: 'Done: made for report',
      steps: 3,
      metadata: { batch: 'b1' },
      error: null,
    });
    expect(task.usage.promptTokens).toBeGreaterThan(0);
    expect(task.usage.completionTokens).toBeGreaterThan(0);
    expect(Date.parse(task.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(task.startedAt!));
    expect(readFileSync(path.join(stack.dataDir, 'work', taskId!, 'out/report.txt'), 'utf8')).toBe('made for report');

    expect(events.map((event) => event.data.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => Number(event.id))).toEqual(events.map((event) => event.data.seq));
    expect(events.map((event) => event.event)).toEqual([
      'task.queued',
      'task.started',
      'llm.request',
      'llm.response',
      'tool.call',
      'tool.result',
      'step.completed',
      'llm.request',
      'llm.response',
      'tool.call',
      'tool.result',
      'step.completed',
      'llm.request',
      'llm.response',
      'step.completed',
      'task.completed',
    ]);
    const first = events[0]!.data;
    expect(first).toMatchObject({
      id: `${taskId}:1`,
      taskId,
      rootId: taskId,
      seq: 1,
      type: 'task.queued',
      agent: 'coder',
    });
    expect(events[5]!.data).toMatchObject({ type: 'tool.result', step: 1, data: { name: 'write_file', ok: true } });
    expect(events[4]!.data.worker).toBe(stack.worker!.id);
  });

  it('replays from Last-Event-ID, and from ?after=, and answers JSON on request', async () => {
    stack = await startStack({ rules: fileWritingRules });
    const [taskId] = await stack.submit([{ prompt: 'replay', agent: 'file' }]);
    const all = await waitForEnd(stack.api.url, taskId!);
    const fromHeader = await readSse(`${stack.api.url}/v1/tasks/${taskId}/events`, { 'last-event-id': '7' });
    expect(fromHeader.map((event) => event.data.seq)).toEqual(all.slice(7).map((event) => event.data.seq));
    expect(fromHeader[0]!.data.seq).toBe(8);
    const fromQuery = await readSse(`${stack.api.url}/v1/tasks/${taskId}/events?after=14`);
    expect(fromQuery.map((event) => event.event)).toEqual(all.slice(14).map((event) => event.event));
    // Resuming after the last event of a task that ended: nothing more, and the stream closes.
    expect(
      await readSse(`${stack.api.url}/v1/tasks/${taskId}/events`, { 'last-event-id': String(all.length) }),
    ).toEqual([]);
    const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`, {
      headers: { accept: 'application/json' },
    });
    expect(((await response.json()) as TaskEvent[]).map((event) => event.seq)).toEqual(
      all.map((event) => event.data.seq),
    );
  });

  it('cuts a follower that stopped reading, which resumes from Last-Event-ID with nothing lost', async () => {
    stack = await startStack({ pools: [] });
    const [taskId] = await stack.submit([{ prompt: 'followed by a client that stops reading', agent: 'casual' }]);
    const store = new TaskStore(
      connectRedis({ url: stack.config.REDIS_URL }),
      createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
    );
    const sseClients = async () =>
      Number(/^agentq_sse_clients (\d+)/m.exec(await (await fetch(`${stack!.api.url}/metrics`)).text())?.[1]);
    const reader = createSseReader();
    const seen: number[] = [];
    let closed!: () => void;
    const streamClosed = new Promise<void>((resolve) => (closed = resolve));
    let following!: (response: IncomingMessage) => void;
    const followed = new Promise<IncomingMessage>((resolve) => (following = resolve));
    httpGet(`${stack.api.url}/v1/tasks/${taskId}/events`, { headers: { accept: 'text/event-stream' } }, (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        for (const message of reader.push(chunk)) seen.push(Number(message.id));
        if (seen.length === 1) following(response);
      });
      response.on('close', closed);
      response.on('error', () => undefined);
    }).on('error', () => undefined);
    // It got the task's first event, and reads nothing more: 60 events of 500 KB come live.
    const response = await followed;
    response.pause();
    const big = 'x'.repeat(500_000);
    for (let index = 0; index < 60; index++)
      await store.commit({
        taskId: taskId!,
        tenant: 'default',
        events: [{ type: 'reasoning', data: { text: `${index} ${big}` } }],
      });
    await expect.poll(sseClients, { timeout: 10_000 }).toBe(0);
    // It reads again: what was sent before the cut, then the end of the stream.
    response.resume();
    await streamClosed;
    expect(seen.length).toBeLessThan(61);
    expect(seen).toEqual(seen.map((_, index) => index + 1));
    // Follows until event 61 arrives.
    const follow = (after: number) =>
      new Promise<number[]>((resolve) => {
        const ids: number[] = [];
        const again = createSseReader();
        httpGet(
          `${stack!.api.url}/v1/tasks/${taskId}/events`,
          { headers: { accept: 'text/event-stream', 'last-event-id': String(after) } },
          (resumed) => {
            resumed.setEncoding('utf8');
            resumed.on('data', (chunk: string) => {
              for (const message of again.push(chunk)) ids.push(Number(message.id));
              if (ids.at(-1) === 61) {
                resumed.destroy();
                resolve(ids);
              }
            });
          },
        );
      });
    // EventSource would reconnect with the last id it got: the rest comes from Redis, none twice.
    const all = Array.from({ length: 61 }, (_, index) => index + 1);
    expect([...seen, ...(await follow(seen.at(-1)!))]).toEqual(all);
    // A replay of them all (30 MB) waits for its client to read; it is not cut.
    expect(await follow(0)).toEqual(all);
    store.redis.disconnect();
  });

  it('a follower that joins mid-run gets the past and then the live events, with no gap', async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResultCount(request) === 0,
          reply: { toolCalls: [{ name: 'bash', arguments: { command: 'echo one' } }] },
        },
        { reply: { content: 'finished', delayMs: 300 } },
      ],
    });
    const [taskId] = await stack.submit([{ prompt: 'slow', agent: 'coder' }]);
    // Join once the first tool ran: the rest arrives live.
    const early = await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`);
    const reader = early.body!.getReader();
    let text = '';
    while (!text.includes('event: tool.result')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const joined = await readSse(`${stack.api.url}/v1/tasks/${taskId}/events`);
    expect(joined.map((event) => event.data.seq)).toEqual(joined.map((_, index) => index + 1));
    expect(joined.at(-1)!.event).toBe('task.completed');
  });

  it('fails the task at once with the provider message on 401', async () => {
    stack = await startStack({ rules: [{ reply: { error: { status: 401, message: 'Incorrect API key provided' } } }] });
    const [taskId] = await stack.submit([{ prompt: 'anything', agent: 'casual' }]);
    const events = await waitForEnd(stack.api.url, taskId!);
    expect(events.at(-1)!.event).toBe('task.failed');
    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(task.status).toBe('failed');
    expect(task.error).toEqual({ code: 'error', message: expect.stringMatching(/401.*Incorrect API key provided/) });
    expect(stack.double.requests).toHaveLength(1);
  });

  it('fails with reason max_steps when the model never stops', async () => {
    stack = await startStack({
      rules: [{ reply: { toolCalls: [{ name: 'bash', arguments: { command: 'true' } }] } }],
      env: { AGENTQ_MAX_STEPS: '2' },
    });
    const [taskId] = await stack.submit([{ prompt: 'loop forever', agent: 'coder' }]);
    await waitForEnd(stack.api.url, taskId!);
    const { body: task } = await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`);
    expect(task).toMatchObject({ status: 'failed', steps: 2, error: { code: 'max_steps' } });
  });

  it('runs at most AGENTQ_MAX_TOOL_CALLS calls of one answer; the model is told of the rest', async () => {
    const calls = ['one', 'two', 'three'].map((word) => ({ name: 'bash', arguments: { command: `echo ${word}` } }));
    stack = await startStack({
      rules: [
        { match: (request: DoubleRequest) => toolResultCount(request) === 0, reply: { toolCalls: calls } },
        { reply: { content: 'done' } },
      ],
      env: { AGENTQ_MAX_TOOL_CALLS: '2' },
    });
    const [taskId] = await stack.submit([{ prompt: 'three at once', agent: 'coder' }]);
    const events = await waitForEnd(stack.api.url, taskId!);
    const results = events
      .filter((event) => event.event === 'tool.result')
      .map((event) => event.data.data as { ok: boolean; output: string; skipped?: boolean });
    expect(results.map((result) => [result.ok, result.output, result.skipped ?? false])).toEqual([
      [true, 'one', false],
      [true, 'two', false],
      [
        false,
        'not run: one answer runs at most 2 tool calls, and this was call 3 of 3. Call it again in your next answer if it is still needed.',
        true,
      ],
    ]);
    expect(events.filter((event) => event.event === 'tool.call')).toHaveLength(2);
    expect(
      stack.double.requests[1]!.messages.filter((message) => message.role === 'tool').map((message) => message.content),
    ).toEqual(['one', 'two', results[2]!.output]);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body).toMatchObject({
      status: 'completed',
      result: 'done',
      steps: 2,
    });
  });

  it('lists tasks newest first, by status, page by page', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'ok' } }], pools: ['casual'] });
    const ids = await stack.submit([1, 2, 3, 4, 5].map((n) => ({ prompt: `task ${n}`, agent: 'casual' })));
    await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
    const page1 = await getJson<{ tasks: TaskView[]; nextCursor: string }>(`${stack.api.url}/v1/tasks?limit=2`);
    expect(page1.body.tasks.map((task) => task.prompt)).toEqual(['task 5', 'task 4']);
    const page2 = await getJson<{ tasks: TaskView[]; nextCursor: string | null }>(
      `${stack.api.url}/v1/tasks?limit=2&cursor=${page1.body.nextCursor}`,
    );
    expect(page2.body.tasks.map((task) => task.prompt)).toEqual(['task 3', 'task 2']);
    const page3 = await getJson<{ tasks: TaskView[]; nextCursor: string | null }>(
      `${stack.api.url}/v1/tasks?limit=2&cursor=${page2.body.nextCursor}`,
    );
    expect(page3.body).toMatchObject({ tasks: [{ prompt: 'task 1' }], nextCursor: null });
    expect(
      (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?status=completed`)).body.tasks,
    ).toHaveLength(5);
    expect((await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?status=queued`)).body.tasks).toHaveLength(
      0,
    );
    const bad = await getJson<{ error: { code: string; message: string } }>(`${stack.api.url}/v1/tasks?status=done`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/status/);
  });
});

describe('deleting a task', () => {
  it('removes an ended task with everything it left: its record, events, memory, list entries and work directory', async () => {
    stack = await startStack({ rules: fileWritingRules, worker: { sweepIntervalMs: 100 } });
    const [taskId, kept] = await stack.submit([
      { prompt: 'gone', agent: 'coder' },
      { prompt: 'kept', agent: 'coder' },
    ]);
    await Promise.all([waitForEnd(stack.api.url, taskId!), waitForEnd(stack.api.url, kept!)]);
    const workdir = path.join(stack.dataDir, 'work', taskId!);
    expect(existsSync(path.join(workdir, 'out', 'gone.txt'))).toBe(true);
    const store = new TaskStore(
      connectRedis({ url: stack.config.REDIS_URL }),
      createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
    );
    try {
      const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}`, { method: 'DELETE' });
      expect(response.status).toBe(204);
      expect((await fetch(`${stack.api.url}/v1/tasks/${taskId}`)).status).toBe(404);
      expect(
        (await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`, { headers: { accept: 'application/json' } })).status,
      ).toBe(404);
      expect(
        (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks`)).body.tasks.map((task) => task.id),
      ).toEqual([kept]);
      const { keys } = store;
      expect(
        await store.redis.exists(
          keys.task(taskId!),
          keys.messages(taskId!),
          keys.events(taskId!),
          keys.packedEvents(taskId!),
        ),
      ).toBe(0);
      expect(await store.redis.zscore(keys.cellOf(taskId!).expiry, taskId!)).toBeNull();
      // Its folder goes with a worker's next sweep; the other task's stays.
      await expect.poll(() => existsSync(workdir), { timeout: 5_000 }).toBe(false);
      expect(existsSync(path.join(stack.dataDir, 'work', kept!, 'out', 'kept.txt'))).toBe(true);
      expect(await store.redis.scard(keys.workdirsToRemove)).toBe(0);
      // Deleted twice, or never there: a 404.
      expect((await fetch(`${stack.api.url}/v1/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(404);
    } finally {
      store.redis.disconnect();
    }
  });

  it('refuses a task that has not ended, and a subtask, saying what to do', async () => {
    stack = await startStack({ pools: [] });
    const [queued] = await stack.submit([{ prompt: 'waits in line', agent: 'casual' }]);
    const refused = await fetch(`${stack.api.url}/v1/tasks/${queued}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: {
        code: 'conflict',
        message: `Task "${queued}" is queued: only a task that has ended (completed, failed or cancelled), with every subtask, can be deleted. Cancel it (POST /v1/tasks/${queued}/cancel) and delete it once it has ended.`,
      },
    });
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${queued}`)).body.status).toBe('queued');
    expect((await fetch(`${stack.api.url}/v1/tasks/${queued}/cancel`, { method: 'POST' })).status).toBe(202);
    expect((await fetch(`${stack.api.url}/v1/tasks/${queued}`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${stack.api.url}/v1/tasks/${queued}.v1.s1`, { method: 'DELETE' })).status).toBe(404);
  });

  it('lets an idempotency key whose task was deleted create a new task, never answer the deleted one', async () => {
    stack = await startStack({ pools: [] });
    const submit = async () =>
      (await (
        await fetch(`${stack!.api.url}/v1/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ tasks: [{ prompt: 'keyed', agent: 'casual', idempotencyKey: 'order-7' }] }),
        })
      ).json()) as {
        tasks: Array<{ id: string; existing?: true }>;
      };
    const [first] = (await submit()).tasks;
    expect((await submit()).tasks).toEqual([{ id: first!.id, status: 'queued', existing: true }]);
    await fetch(`${stack.api.url}/v1/tasks/${first!.id}/cancel`, { method: 'POST' });
    expect((await fetch(`${stack.api.url}/v1/tasks/${first!.id}`, { method: 'DELETE' })).status).toBe(204);
    const [again] = (await submit()).tasks;
    expect(again).toEqual({ id: expect.not.stringMatching(first!.id), status: 'queued' });
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${again!.id}`)).body.status).toBe('queued');
  });
});

describe('cancellation', () => {
  it('a queued task never starts', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'should not run' } }], pools: [] });
    const [taskId] = await stack.submit([{ prompt: 'wait in line', agent: 'file' }]);
    const response = await fetch(`${stack.api.url}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
    expect(response.status).toBe(202);
    const events = await waitForEnd(stack.api.url, taskId!);
    expect(events.map((event) => event.event)).toEqual(['task.queued', 'task.cancelled']);
    // Its job is gone from the queue: no worker will ever pick it up.
    const queues = createAgentQueues({
      pools: ['planner', 'coder', 'file', 'casual', 'web'],
      connection: connectRedis({ url: stack.config.REDIS_URL }),
      keys: createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS),
    });
    expect(await queues.of(taskId!).queue('file').getJob(taskId!)).toBeUndefined();
    expect(await queues.of(taskId!).queue('file').getJobCounts('waiting', 'prioritized', 'active')).toEqual({
      waiting: 0,
      prioritized: 0,
      active: 0,
    });
    await closeQueues(queues);
    expect(stack.double.requests).toHaveLength(0);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.status).toBe('cancelled');
  });

  it('a running task stops at once: the in-flight model call is aborted', async () => {
    // The model would answer in ten minutes: the task ends only because its call was aborted.
    stack = await startStack({ rules: [{ reply: { content: 'too slow', delayMs: 600_000 } }] });
    const [taskId] = await stack.submit([{ prompt: 'think for long', agent: 'casual' }]);
    const stream = await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`);
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('event: llm.request')) text += new TextDecoder().decode((await reader.read()).value);
    await fetch(`${stack.api.url}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
    while (!text.includes('event: task.cancelled')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('event: task.cancelled');
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.status).toBe('cancelled');
  });

  it('answers 404 for an unknown task', async () => {
    stack = await startStack({ pools: [] });
    const response = await fetch(`${stack.api.url}/v1/tasks/nope/cancel`, { method: 'POST' });
    expect(response.status).toBe(404);
    expect(existsSync(stack.dataDir)).toBe(true);
  });
});

describe('a worker that shuts down', () => {
  it('hands its running task back to the queue, and another worker finishes it', async () => {
    stack = await startStack({
      pools: [],
      rules: [
        // Ten minutes: the worker's close returns only because it does not wait for the call.
        { times: 1, reply: { content: 'never delivered', delayMs: 600_000 } },
        { reply: { content: 'finished by the second worker' } },
      ],
    });
    const { startWorker } = await import('@agentq/worker');
    const first = await startWorker({ config: stack.config, pools: ['casual'], shutdownGraceMs: 100 });
    const [taskId] = await stack.submit([{ prompt: 'long think', agent: 'casual' }]);
    await expect.poll(() => stack!.double.requests.length, { timeout: 10_000 }).toBe(1);
    await first.close();
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.status).toBe('queued');
    const second = await startWorker({ config: stack.config, pools: ['casual'], shutdownGraceMs: 100 });
    const events = await waitForEnd(stack.api.url, taskId!);
    await second.close();
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body).toMatchObject({
      status: 'completed',
      result: 'finished by the second worker',
    });
    expect(events.map((event) => event.event)).toEqual([
      'task.queued',
      'task.started',
      'llm.request',
      'task.queued',
      'task.started',
      'llm.request',
      'llm.response',
      'step.completed',
      'task.completed',
    ]);
    expect(events[3]!.data.data).toEqual({ reason: 'its worker shut down; it resumes on another' });
  });

  it('tells the model that a tool it stopped mid-run was stopped by the worker, not cancelled, and may run again', async () => {
    const marker = `29.${Date.now() % 100_000}`;
    stack = await startStack({
      pools: [],
      rules: [
        {
          match: (request) => !request.messages.some((message) => message.role === 'tool'),
          reply: { toolCalls: [{ name: 'bash', arguments: { command: `sleep ${marker}; echo slept` } }] },
        },
        { reply: { content: 'went on' } },
      ],
    });
    const { startWorker } = await import('@agentq/worker');
    const first = await startWorker({ config: stack.config, pools: ['coder'], shutdownGraceMs: 100 });
    const [taskId] = await stack.submit([{ prompt: 'a long tool', agent: 'coder' }]);
    // Its tool is running.
    await expect.poll(() => processesMatching(`sleep ${marker}`).length, { timeout: 10_000 }).toBeGreaterThan(0);
    await first.close();
    const second = await startWorker({ config: stack.config, pools: ['coder'], shutdownGraceMs: 100 });
    await waitForEnd(stack.api.url, taskId!);
    await second.close();
    const told = stack.double.requests.at(-1)!.messages.find((message) => message.role === 'tool');
    expect(String(told?.content)).toMatch(
      /\[stopped: the worker running this task stopped \(a deploy or a scale-down\) while this ran, and the task went on on another worker: run it again if you still need its result\]$/,
    );
    expect(String(told?.content)).not.toMatch(/cancelled/);
  });
});

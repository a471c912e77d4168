/**
 * A model endpoint that cannot be reached, with real worker processes sharing Redis: the endpoint stopped
 * (its port closed: connection refused) and started again, or answering 503 for a while. No task fails
 * and none spends an attempt; one call at a time tries the endpoint; a task fails only once it waited
 * longer than models.<model>.outage allows, saying so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { startOpenAIDouble, type DoubleReply, type OpenAIDouble } from '@agentq/llm';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEventWhere } from '../helpers/sse.js';

let fleet: Fleet | undefined;
let restarted: OpenAIDouble | undefined;
afterEach(async () => {
  await restarted?.close();
  await fleet?.stop();
  fleet = restarted = undefined;
});

const isOutageWait = (event: TaskEvent) => event.type === 'task.queued' && event.data.modelUnreachable === true;

async function submit(baseUrl: string, tasks: unknown[]): Promise<string[]> {
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

async function taskOf(baseUrl: string, id: string): Promise<TaskView> {
  return (await (await fetch(`${baseUrl}/v1/tasks/${id}`)).json()) as TaskView;
}

/** The attempt numbers each run said as it started (`task.started`), and the retries it was queued for. */
function attemptsOf(events: TaskEvent[]) {
  return {
    started: events.flatMap((event) => (event.type === 'task.started' ? [event.data.attempt] : [])),
    retries: events.filter((event) => event.type === 'task.queued' && event.data.retry !== undefined).length,
  };
}

const fiveTasks = (name: string) =>
  Array.from({ length: 5 }, (_, index) => ({ prompt: `${name} ${index}`, agent: 'casual' }));

describe('an unreachable model endpoint', () => {
  it('stopped for 30 s and started again on its port: no task fails, none spends an attempt (default settings)', async () => {
    fleet = await startFleet({
      name: 'outage-stop',
      model: 'm',
      rules: [{ reply: { content: 'never asked' } }],
      workers: 2,
      pools: 'casual',
      env: {},
    });
    const port = Number(new URL(fleet.double.baseURL).port);
    await fleet.double.close();
    const stoppedAt = Date.now();
    const ids = await submit(fleet.baseUrl, fiveTasks('while down'));
    // Each run gave its slot back and says it waits for the endpoint, with the error.
    const waits = await Promise.all(ids.map((id) => waitForEventWhere(fleet!.baseUrl, id, isOutageWait)));
    for (const wait of waits)
      expect(wait.type === 'task.queued' && wait.data.reason).toMatch(
        /^waiting for the endpoint of model m to answer again: Could not reach the LLM endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(model m\)/,
      );
    // The outage itself: the endpoint stays down 30 s in all (the scenario, not a wait for a condition).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + 30_000 - Date.now())));
    restarted = await startOpenAIDouble({ port, rules: [{ reply: { content: 'back again' } }] });
    const backAt = Date.now();
    const streams = await Promise.all(ids.map((id) => waitForEnd(fleet!.baseUrl, id)));
    const tasks = await Promise.all(ids.map((id) => taskOf(fleet!.baseUrl, id)));
    expect(tasks.map((task) => [task.status, task.result, task.error])).toEqual(
      ids.map(() => ['completed', 'back again', null]),
    );
    // Every task ran its first attempt only: the outage spent none.
    for (const stream of streams) {
      const { started, retries } = attemptsOf(stream.map((message) => message.data));
      expect(started.length).toBeGreaterThanOrEqual(2);
      expect({ attempts: [...new Set(started)], retries }).toEqual({ attempts: [1], retries: 0 });
    }
    const recovered = Math.max(...tasks.map((task) => Date.parse(task.finishedAt!))) - backAt;
    console.log(
      `model down ${Math.round((backAt - stoppedAt) / 1000)} s, ${ids.length} tasks: 0 failed, attempts spent 0; all completed ${(recovered / 1000).toFixed(1)} s after the endpoint was back; requests to it once back: ${restarted.requests.length}`,
    );
    // The next try comes within the cap (30 s, less jitter) of its last failure.
    expect(recovered).toBeLessThan(35_000);
  }, 120_000);

  it('answering 503 for a while: one call at a time tries it, no task fails, none spends an attempt', async () => {
    let healthy = false;
    let inFlight = 0;
    let mostAtOnce = 0;
    let failedCalls = 0;
    /** Resolves once the endpoint has answered 503 to this many calls more. */
    let tried = (_count: number) => undefined as void;
    const unavailable = async (): Promise<DoubleReply> => {
      inFlight++;
      mostAtOnce = Math.max(mostAtOnce, inFlight);
      // An endpoint that takes a moment to fail: calls made together overlap.
      await new Promise((resolve) => setTimeout(resolve, 100));
      inFlight--;
      tried(++failedCalls);
      return { error: { status: 503, message: 'upstream unavailable', type: 'server_error' } };
    };
    fleet = await startFleet({
      name: 'outage-503',
      model: 'm',
      rules: [{ reply: () => (healthy ? { content: 'served' } : unavailable()) }],
      workers: 2,
      pools: 'casual',
      env: {
        AGENTQ_LLM_MAX_RETRIES: '0',
        AGENTQ_CONFIG: configFile({ models: { m: { outage: { maxBackoffSeconds: 1 } } } }),
      },
    });
    const ids = await submit(fleet.baseUrl, fiveTasks('while 503'));
    await Promise.all(ids.map((id) => waitForEventWhere(fleet!.baseUrl, id, isOutageWait)));
    // Once every task waits, only the one try goes out at a time: three more of them, then it serves.
    const wave = failedCalls;
    mostAtOnce = inFlight;
    await new Promise<void>((resolve) => {
      tried = (count) => (count >= wave + 3 ? resolve() : undefined);
    });
    healthy = true;
    const streams = await Promise.all(ids.map((id) => waitForEnd(fleet!.baseUrl, id)));
    const tasks = await Promise.all(ids.map((id) => taskOf(fleet!.baseUrl, id)));
    expect(tasks.map((task) => [task.status, task.result])).toEqual(ids.map(() => ['completed', 'served']));
    for (const stream of streams) {
      const { started, retries } = attemptsOf(stream.map((message) => message.data));
      expect({ attempts: [...new Set(started)], retries }).toEqual({ attempts: [1], retries: 0 });
    }
    expect(mostAtOnce).toBe(1);
    // The first calls found no outage yet (each of the five, at most); every later one was a single try.
    expect(wave).toBeLessThanOrEqual(ids.length);
    console.log(
      `503 for a while, ${ids.length} tasks: 0 failed, attempts spent 0; calls answered 503: ${failedCalls} (${wave} before the outage was known, then ${failedCalls - wave} single tries, at most ${mostAtOnce} at once)`,
    );
  }, 60_000);

  it('fails a task once it waited longer than models.<model>.outage.failAfterMinutes, saying so', async () => {
    fleet = await startFleet({
      name: 'outage-window',
      model: 'm',
      rules: [],
      workers: 1,
      pools: 'casual',
      env: {
        AGENTQ_LLM_MAX_RETRIES: '0',
        AGENTQ_CONFIG: configFile({ models: { m: { outage: { failAfterMinutes: 0.05, maxBackoffSeconds: 1 } } } }),
      },
    });
    await fleet.double.close();
    const [id] = await submit(fleet.baseUrl, [{ prompt: 'anyone there?', agent: 'casual' }]);
    const events = (await waitForEnd(fleet.baseUrl, id!)).map((message) => message.data);
    const task = await taskOf(fleet.baseUrl, id!);
    expect(task.status).toBe('failed');
    expect(task.error!.message).toMatch(
      /^The model endpoint of m was unreachable for ([3-9]|\d\d) s \(models\.m\.outage\.failAfterMinutes\): Could not reach the LLM endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(model m\): Connection error\.$/,
    );
    // It waited, tried again with backoff, and spent no attempt doing so.
    expect(events.filter(isOutageWait).length).toBeGreaterThanOrEqual(2);
    expect({ attempts: [...new Set(attemptsOf(events).started)], retries: attemptsOf(events).retries }).toEqual({
      attempts: [1],
      retries: 0,
    });
  }, 60_000);

  it('uses the fallback models first: a task whose model is down completes on its fallback, without waiting', async () => {
    fleet = await startFleet({
      name: 'outage-fallback',
      model: 'm',
      rules: [
        { match: (request) => request.model === 'm', reply: { error: { status: 503, message: 'm is down' } } },
        { reply: { content: 'from the fallback' } },
      ],
      workers: 1,
      pools: 'casual',
      env: {
        AGENTQ_LLM_MAX_RETRIES: '0',
        AGENTQ_CONFIG: configFile({
          agents: {
            casual: { description: 'chats', instructions: 'You are a helpful assistant.', fallbackModels: ['backup'] },
          },
        }),
      },
    });
    const [id] = await submit(fleet.baseUrl, [{ prompt: 'hello', agent: 'casual' }]);
    const events = (await waitForEnd(fleet.baseUrl, id!)).map((message) => message.data);
    expect(await taskOf(fleet.baseUrl, id!)).toMatchObject({ status: 'completed', result: 'from the fallback' });
    expect(events.filter(isOutageWait)).toEqual([]);
    expect(fleet.double.requests.map((request) => request.model)).toEqual(['m', 'backup']);
  }, 60_000);

  it('hands the next try to a waiting task when the task that was to make it is cancelled', async () => {
    fleet = await startFleet({
      name: 'outage-cancel',
      model: 'm',
      rules: [],
      workers: 1,
      pools: 'casual',
      env: {
        AGENTQ_LLM_MAX_RETRIES: '0',
        AGENTQ_CONFIG: configFile({ models: { m: { outage: { maxBackoffSeconds: 1 } } } }),
      },
    });
    const port = Number(new URL(fleet.double.baseURL).port);
    await fleet.double.close();
    const ids = await submit(fleet.baseUrl, fiveTasks('cancel').slice(0, 2));
    await Promise.all(ids.map((id) => waitForEventWhere(fleet!.baseUrl, id, isOutageWait)));
    // The task that tries the endpoint says so again at each try; the other waits to be woken.
    const secondWait = () => {
      let waits = 0;
      return (event: TaskEvent) => isOutageWait(event) && ++waits === 2;
    };
    const prober = await Promise.race(
      ids.map(async (id) => (await waitForEventWhere(fleet!.baseUrl, id, secondWait()), id)),
    );
    const waiter = ids.find((id) => id !== prober)!;
    const cancelled = await fetch(`${fleet.baseUrl}/v1/tasks/${prober}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(202);
    restarted = await startOpenAIDouble({ port, rules: [{ reply: { content: 'back' } }] });
    const backAt = Date.now();
    await waitForEnd(fleet.baseUrl, waiter);
    expect(await taskOf(fleet.baseUrl, waiter)).toMatchObject({ status: 'completed', result: 'back' });
    expect((await taskOf(fleet.baseUrl, prober)).status).toBe('cancelled');
    // Within the cap of a try, not the minutes a waiter sleeps while another job is to try.
    expect(Date.now() - backAt).toBeLessThan(10_000);
  }, 60_000);
});

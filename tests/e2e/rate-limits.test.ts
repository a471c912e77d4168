/**
 * A provider's token limit, shared by two worker processes through Redis: the calls the wire double
 * receives never exceed the limit in any window by more than one call, both processes take part, the
 * limit is what paces the batch, and the tasks that waited say so (with when they expect to start).
 */
import { afterAll, expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';
import { configFile } from '../helpers/config-file.js';

const WINDOW_MS = 2_000;
const LIMIT = 1_500;
/** Less than what a call reserves (its counted prompt and tools, hundreds of tokens, plus its max output). */
const CALL = { promptTokens: 50, completionTokens: 100 };
const CALL_TOKENS = CALL.promptTokens + CALL.completionTokens;
const TASKS = 40;

let fleet: Fleet | undefined;
afterAll(() => fleet?.stop());

it('keeps two worker processes within one shared token limit, and the waiting tasks say when they start', async () => {
  fleet = await startFleet({
    name: 'limits',
    model: 'limited-model',
    rules: [{ reply: { content: 'done', usage: CALL } }],
    workers: 2,
    pools: 'casual',
    env: {
      AGENTQ_CONFIG: configFile({
        models: { 'limited-model': { limits: { tokens: LIMIT, perSeconds: WINDOW_MS / 1000 } } },
      }),
      // Each call reserves its counted prompt plus this: at least what the double reports.
      AGENTQ_MAX_OUTPUT_TOKENS: String(CALL.completionTokens),
      AGENTQ_CONCURRENCY: '8',
    },
  });
  const { baseUrl, double } = fleet;
  const response = await fetch(`${baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      tasks: Array.from({ length: TASKS }, (_, index) => ({ prompt: `say ${index}`, agent: 'casual' })),
    }),
  });
  const ids = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
  const streams = await Promise.all(ids.map((id) => waitForEnd(baseUrl, id)));
  const events = streams.map((stream) => stream.map((message) => message.data));
  expect(events.map((stream) => stream.at(-1)!.type)).toEqual(ids.map(() => 'task.completed'));

  // Every window of the double's requests holds at most the limit, and one call more at the edges.
  const times = double.receivedAt;
  expect(times).toHaveLength(TASKS);
  for (const start of times) {
    const inWindow = times.filter((time) => time >= start && time < start + WINDOW_MS).length;
    expect(inWindow * CALL_TOKENS).toBeLessThanOrEqual(LIMIT + CALL_TOKENS);
  }
  // The limit paced the batch: 40 calls at 10 a window take at least three windows more.
  expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(3 * WINDOW_MS - 100);

  // Both processes drew on the one budget.
  const workers = new Set(
    events.flatMap((stream) => stream.filter((event) => event.type === 'task.started').map((event) => event.worker)),
  );
  expect(workers.size).toBe(2);

  // Those that waited gave their slot back and said when they expected to start.
  const isWait = (event: TaskEvent): event is Extract<TaskEvent, { type: 'task.queued' }> =>
    event.type === 'task.queued' && event.data.rateLimited === true;
  const waits = events.flatMap((stream) =>
    stream.flatMap((event, index) =>
      isWait(event)
        ? [{ wait: event, started: stream.slice(0, index).findLast((earlier) => earlier.type === 'task.started')! }]
        : [],
    ),
  );
  expect(waits.length).toBeGreaterThanOrEqual(TASKS - LIMIT / CALL_TOKENS - 10);
  for (const { wait, started } of waits) {
    // The run that had to wait started, asked, and was told a time within a window of then.
    // It names where the limit is set: the configuration file's key, never a variable agentq refuses.
    expect(wait.data.reason).toBe(
      'waiting for rate limit of limited-model: its shared limit (models.limited-model.limits) is used up for now',
    );
    const expected = Date.parse(wait.data.notBefore!);
    expect(expected).toBeGreaterThan(Date.parse(started.ts));
    expect(expected).toBeLessThanOrEqual(Date.parse(wait.ts) + WINDOW_MS + 50);
  }
}, 60_000);

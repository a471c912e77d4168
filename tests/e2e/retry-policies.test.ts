/**
 * Retry policies with real worker processes: an error that is not an outage of the model endpoint (here a
 * broken 2xx body, every time) is tried as often, and as far apart, as the agent's policy in the file
 * says, or as the submit asked for its task.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { configFile } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'retry-policies',
    model: 'm',
    // Every answer is broken (a 200 that is not JSON): an error of the answer, not of the endpoint's reach.
    rules: [{ reply: { fault: 'not-json' } }],
    workers: 2,
    pools: 'planner,casual',
    env: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONFIG: configFile({
        agents: {
          casual: {
            description: 'chats',
            instructions: 'You are a helpful assistant.',
            retry: { attempts: 2, backoff: 1, maxAttempts: 4 },
          },
        },
      }),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

async function run(task: Record<string, unknown>): Promise<{ task: TaskView; events: TaskEvent[] }> {
  const response = await fetch(`${fleet.baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [task.plan ? task : { agent: 'casual', ...task }] }),
  });
  expect(response.status).toBe(202);
  const [{ id }] = ((await response.json()) as { tasks: Array<{ id: string }> }).tasks as [{ id: string }];
  const events = (await waitForEnd(fleet.baseUrl, id)).map((message) => message.data);
  return { task: (await (await fetch(`${fleet.baseUrl}/v1/tasks/${id}`)).json()) as TaskView, events };
}

/** When each run started, and its attempt's number. */
const starts = (events: TaskEvent[]) =>
  events.flatMap((event) =>
    event.type === 'task.started' ? [{ attempt: event.data.attempt, at: Date.parse(event.ts) }] : [],
  );

it("tries a task as often as its agent's policy says, then fails it with the error", async () => {
  const { task, events } = await run({ prompt: 'the agent decides' });
  expect(task).toMatchObject({ status: 'failed', retry: null });
  expect(task.error!.message).toMatch(/sent a broken answer/);
  const runs = starts(events);
  expect(runs.map((start) => start.attempt)).toEqual([1, 2]);
  // The agent's backoff: a second before the second.
  expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(1_000);
  const retried = events.find((event) => event.type === 'task.queued' && event.data.retry === 2);
  expect(retried?.type === 'task.queued' && retried.data.notBefore).toBeTruthy();
});

it('tries a task as often and as far apart as its submit asked, within the agent’s most', async () => {
  const { task, events } = await run({ prompt: 'the submit decides', retry: { attempts: 3, backoff: 1.5 } });
  expect(task).toMatchObject({ status: 'failed', retry: { attempts: 3, backoff: 1.5 } });
  const runs = starts(events);
  expect(runs.map((start) => start.attempt)).toEqual([1, 2, 3]);
  // 1.5 s, then twice that.
  expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(1_500);
  expect(runs[2]!.at - runs[1]!.at).toBeGreaterThanOrEqual(3_000);
});

it('tries a task once when its submit asks for one attempt', async () => {
  const { task, events } = await run({ prompt: 'once', retry: { attempts: 1 } });
  expect(task.status).toBe('failed');
  expect(starts(events).map((start) => start.attempt)).toEqual([1]);
});

it("runs a planned task's subtasks with the policy its submit asked for", async () => {
  const { task } = await run({
    prompt: 'planned',
    plan: [{ id: 'only', agent: 'casual', task: 'answer' }],
    retry: { attempts: 3, backoff: 1 },
  });
  expect(task.status).toBe('failed');
  const [child] = task.children!;
  const events = (await waitForEnd(fleet.baseUrl, child!.id)).map((message) => message.data);
  expect(starts(events).map((start) => start.attempt)).toEqual([1, 2, 3]);
});

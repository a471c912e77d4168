/**
 * The surfaces of an unreachable model endpoint and of retry policies, attacked. A tenant writes a
 * submit's `retry` (and a schedule's task's): a billion attempts, a backoff of 0, negative or of years, an
 * agent's maximum passed; each is a 400 naming the field, and nothing is made. A tenant cannot point a
 * task at an endpoint of its own (only the operator's models), but its prompts can make the shared
 * endpoint fail (a 500 for that prompt, forever): the pause that follows is that tenant's alone, and
 * another tenant's tasks on the same model run on. A tenant that sends many tasks at a down endpoint
 * gets one try at a time, as does every other tenant; neither holds the other's.
 * Real API and worker processes, the wire double as the model.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '@agentq/contract';
import { firstUserText, type DoubleReply, type DoubleRequest } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEventWhere } from '../helpers/sse.js';

const HOSTILE = `hostile-${randomBytes(8).toString('hex')}`;
const VICTIM = `victim-${randomBytes(8).toString('hex')}`;

/** The endpoint: down for everyone while `down`; a prompt with POISON crashes it, for anyone, always. */
const endpoint = { down: false, inFlight: 0, mostAtOnce: 0, failed: 0, onFailure: () => undefined as void };
const POISON = 'POISON';
const failing = async (status: number): Promise<DoubleReply> => {
  endpoint.inFlight++;
  endpoint.mostAtOnce = Math.max(endpoint.mostAtOnce, endpoint.inFlight);
  // A failure takes a moment: calls made together overlap.
  await new Promise((resolve) => setTimeout(resolve, 50));
  endpoint.inFlight--;
  endpoint.failed++;
  endpoint.onFailure();
  return { error: { status, message: 'the server had an error', type: 'server_error' } };
};
const reply = (request: DoubleRequest): DoubleReply | Promise<DoubleReply> =>
  firstUserText(request).includes(POISON) ? failing(500) : endpoint.down ? failing(503) : { content: 'served' };

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'outage-attacks',
    model: 'm',
    rules: [{ reply }],
    workers: 2,
    pools: 'casual',
    env: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: '20',
      ...tenantsEnv(
        { hostile: { keys: [HOSTILE] }, victim: { keys: [VICTIM] } },
        {
          agents: {
            casual: {
              description: 'chats',
              instructions: 'You are a helpful assistant.',
              retry: { attempts: 2, maxAttempts: 3 },
            },
          },
          models: {
            m: { outage: { maxBackoffSeconds: 1 } },
            // The model the poison is sent to: its waits end soon, so the hostile tenant's tasks end.
            shared: { outage: { failAfterMinutes: 0.1, maxBackoffSeconds: 1 } },
          },
        },
      ),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function post(key: string, route: string, body: unknown) {
  const response = await fetch(`${fleet.baseUrl}${route}`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function submit(key: string, tasks: unknown[]): Promise<string[]> {
  const { status, body } = await post(key, '/v1/tasks', { tasks });
  expect(status).toBe(202);
  return (body.tasks as Array<{ id: string }>).map((task) => task.id);
}

async function taskOf(key: string, id: string): Promise<TaskView> {
  return (await (await fetch(`${fleet.baseUrl}/v1/tasks/${id}`, { headers: auth(key) })).json()) as TaskView;
}

async function taskCount(key: string): Promise<number> {
  const page = (await (await fetch(`${fleet.baseUrl}/v1/tasks?limit=500`, { headers: auth(key) })).json()) as {
    tasks: unknown[];
  };
  return page.tasks.length;
}

const isOutageWait = (event: TaskEvent) => event.type === 'task.queued' && event.data.modelUnreachable === true;

describe("a submit's retry policy, written by a tenant", () => {
  const refused: Array<[string, unknown, RegExp]> = [
    ['a billion attempts', { attempts: 1e9 }, /tasks\.0\.retry\.attempts: must be at most 10/],
    ['no attempt at all', { attempts: 0 }, /tasks\.0\.retry\.attempts: must be at least 1/],
    ['a fraction of an attempt', { attempts: 2.5 }, /tasks\.0\.retry\.attempts: must be a whole number/],
    ['attempts as text', { attempts: '3' }, /tasks\.0\.retry\.attempts: /],
    [
      "more than the agent's most",
      { attempts: 4 },
      /tasks\.0\.retry\.attempts: must be at most 3, the most agent "casual" allows \(agents\.casual\.retry\.maxAttempts\)/,
    ],
    ['no backoff', { backoff: 0 }, /tasks\.0\.retry\.backoff: must be at least 1/],
    ['a negative backoff', { backoff: -60 }, /tasks\.0\.retry\.backoff: must be at least 1/],
    ['a backoff of years', { backoff: 1e9 }, /tasks\.0\.retry\.backoff: must be at most 3600/],
    ['an empty policy', {}, /tasks\.0\.retry: must name "attempts", "backoff" or both/],
    ['a field of its own', { attempts: 2, jitter: 0 }, /tasks\.0\.retry: unknown field "jitter"/],
  ];
  it.each(refused)('refuses %s on submit, naming the field, and makes nothing', async (_name, retry, message) => {
    const before = await taskCount(HOSTILE);
    const { status, body } = await post(HOSTILE, '/v1/tasks', {
      tasks: [{ prompt: 'retry me', agent: 'casual', retry }],
    });
    expect(status).toBe(400);
    expect((body.error as { message: string }).message).toMatch(message);
    expect(await taskCount(HOSTILE)).toBe(before);
  });

  it("refuses a schedule's task whose policy passes the bounds", async () => {
    const { status, body } = await post(HOSTILE, '/v1/schedules', {
      every: 60_000,
      task: { prompt: 'retry me forever', agent: 'casual', retry: { attempts: 1e9, backoff: 0 } },
    });
    expect(status).toBe(400);
    expect((body.error as { message: string }).message).toMatch(
      /task\.retry\.attempts: must be at most 10.*task\.retry\.backoff: must be at least 1/,
    );
  });

  it('cannot name an endpoint: only the models the operator configured', async () => {
    const own = await post(HOSTILE, '/v1/tasks', {
      tasks: [{ prompt: 'x', agent: 'casual', model: 'http://attacker.example/v1' }],
    });
    expect(own.status).toBe(400);
    expect((own.body.error as { message: string }).message).toMatch(/tasks\.0\.model: /);
    const field = await post(HOSTILE, '/v1/tasks', {
      tasks: [{ prompt: 'x', agent: 'casual', baseURL: 'http://attacker.example/v1' }],
    });
    expect(field.status).toBe(400);
    expect((field.body.error as { message: string }).message).toMatch(/unknown field "baseURL"/);
  });
});

describe('the pause of an unreachable endpoint, used against another tenant', () => {
  it("pauses a tenant whose prompts make the shared endpoint answer 500, never another tenant's tasks", async () => {
    const poisoned = await submit(
      HOSTILE,
      Array.from({ length: 5 }, (_, index) => ({ prompt: `${POISON} ${index}`, agent: 'casual', model: 'shared' })),
    );
    // The hostile tenant's tasks wait on an endpoint that fails them: its outage is open.
    await Promise.all(poisoned.map((id) => waitForEventWhere(fleet.baseUrl, id, isOutageWait, auth(HOSTILE))));
    const started = Date.now();
    const ids = await submit(
      VICTIM,
      Array.from({ length: 5 }, (_, index) => ({ prompt: `fine ${index}`, agent: 'casual', model: 'shared' })),
    );
    const streams = await Promise.all(ids.map((id) => waitForEnd(fleet.baseUrl, id, auth(VICTIM))));
    const tasks = await Promise.all(ids.map((id) => taskOf(VICTIM, id)));
    expect(tasks.map((task) => [task.status, task.result])).toEqual(ids.map(() => ['completed', 'served']));
    // Not one waited for the hostile tenant's outage.
    expect(streams.flat().filter((message) => isOutageWait(message.data))).toEqual([]);
    const victimMs = Date.now() - started;
    // The hostile tenant's own tasks end once their window passed, each saying why.
    await Promise.all(poisoned.map((id) => waitForEnd(fleet.baseUrl, id, auth(HOSTILE))));
    for (const id of poisoned)
      expect((await taskOf(HOSTILE, id)).error?.message).toMatch(
        /^The model endpoint of shared was unreachable for \d+ s \(models\.shared\.outage\.failAfterMinutes\): The LLM endpoint .* answered 500/,
      );
    console.log(`poisoned endpoint: the other tenant's 5 tasks completed in ${victimMs} ms, none waited`);
  }, 60_000);

  it("gives a tenant that sends many tasks at a down endpoint one try at a time, and holds no other tenant's", async () => {
    endpoint.down = true;
    const before = endpoint.failed;
    const spam = await submit(
      HOSTILE,
      Array.from({ length: 40 }, (_, index) => ({ prompt: `spam ${index}`, agent: 'casual' })),
    );
    await Promise.all(spam.map((id) => waitForEventWhere(fleet.baseUrl, id, isOutageWait, auth(HOSTILE))));
    const [victimTask] = await submit(VICTIM, [{ prompt: 'mine', agent: 'casual' }]);
    await waitForEventWhere(fleet.baseUrl, victimTask!, isOutageWait, auth(VICTIM));
    // From now on every task waits: each tenant's single try is all that reaches the endpoint.
    const wave = endpoint.failed - before;
    endpoint.mostAtOnce = endpoint.inFlight;
    await new Promise<void>((resolve) => {
      endpoint.onFailure = () => (endpoint.failed - before >= wave + 6 ? resolve() : undefined);
    });
    expect(endpoint.mostAtOnce).toBeLessThanOrEqual(2);
    endpoint.down = false;
    const back = Date.now();
    await waitForEnd(fleet.baseUrl, victimTask!, auth(VICTIM));
    const victimBackMs = Date.now() - back;
    expect(await taskOf(VICTIM, victimTask!)).toMatchObject({ status: 'completed', result: 'served' });
    // The next try of each tenant comes within the cap (1 s here) of its last failure.
    expect(victimBackMs).toBeLessThan(5_000);
    await Promise.all(spam.map((id) => waitForEnd(fleet.baseUrl, id, auth(HOSTILE))));
    const spamTasks = await Promise.all(spam.map((id) => taskOf(HOSTILE, id)));
    expect(spamTasks.filter((task) => task.status !== 'completed')).toEqual([]);
    console.log(
      `40 tasks of one tenant at a down endpoint: at most ${endpoint.mostAtOnce} calls at once (one try per tenant) after ${wave} first calls; the other tenant's task completed ${victimBackMs} ms after the endpoint was back`,
    );
  }, 60_000);
});

/**
 * Jobs that wait must not escape fair admission. Admission keeps a pool's queue to a short backlog so
 * that a tenant that arrives waits for that backlog, not for another tenant's batch. A task whose run
 * waits (its model's endpoint down) used to leave the queue as a delayed job, so admission let in more
 * of its tenant's, until a whole batch waited; when the endpoint answered again the batch came back at
 * once, ahead of the other tenant's task. Now a waiting task goes back through its tenant's list when
 * its wait is over, and takes fair turns. The same for a retry's backoff. Real API and worker processes,
 * the wire double as the model.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { firstUserText, type DoubleReply, type DoubleRequest } from '@agentq/llm';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd, waitForEventWhere } from '../helpers/sse.js';

const BACKLOG = 10;
const CONCURRENCY = 4;
const BATCH = 300;
const BATCHER = `batcher-${randomBytes(8).toString('hex')}`;
const LATECOMER = `latecomer-${randomBytes(8).toString('hex')}`;

const FLAKY = 'flaky';

/**
 * The endpoint: 503 while `down`; a broken body for a FLAKY prompt's first call (its run fails, to be
 * tried again); else it answers after a moment, and notes whose prompt and when (`onServed`).
 */
const endpoint = {
  down: true,
  served: [] as Array<{ prompt: string; at: number }>,
  tried: new Set<string>(),
  onServed: (_prompt: string) => undefined as void,
};
const reply = async (request: DoubleRequest): Promise<DoubleReply> => {
  const prompt = firstUserText(request);
  if (prompt.startsWith(FLAKY) && !endpoint.tried.has(prompt)) {
    endpoint.tried.add(prompt);
    return { fault: 'not-json' };
  }
  // Calls take a moment either way: a batch's calls overlap, and the batch takes a while to run.
  await new Promise((resolve) => setTimeout(resolve, endpoint.down ? 20 : 100));
  if (endpoint.down) return { error: { status: 503, message: 'overloaded', type: 'server_error' } };
  endpoint.served.push({ prompt, at: Date.now() });
  endpoint.onServed(prompt);
  return { content: 'served' };
};

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'fair-waits',
    model: 'm',
    rules: [{ reply }],
    workers: 1,
    pools: 'casual',
    env: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: String(CONCURRENCY),
      AGENTQ_FAIR_BACKLOG: String(BACKLOG),
      ...tenantsEnv(
        { batcher: { keys: [BATCHER] }, latecomer: { keys: [LATECOMER] } },
        { models: { m: { outage: { maxBackoffSeconds: 1 } } } },
      ),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function submit(
  key: string,
  prompts: string[],
  retry?: { attempts: number; backoff: number },
): Promise<string[]> {
  const response = await fetch(`${fleet.baseUrl}/v1/tasks`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify({
      tasks: prompts.map((prompt) => ({ prompt, agent: 'casual', ...(retry ? { retry } : {}) })),
    }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
}

const isOutageWait = (event: TaskEvent) => event.type === 'task.queued' && event.data.modelUnreachable === true;

/** Waits, a slice of streams at a time, until each task said it waits for the endpoint. */
async function eachWaited(key: string, ids: readonly string[]): Promise<void> {
  for (let from = 0; from < ids.length; from += 50)
    await Promise.all(
      ids.slice(from, from + 50).map((id) => waitForEventWhere(fleet.baseUrl, id, isOutageWait, auth(key))),
    );
}

it("lets a tenant's task that waited for a down endpoint run before at most a backlog of another tenant's batch", async () => {
  const batch = await submit(
    BATCHER,
    Array.from({ length: BATCH }, (_, index) => `batch ${index}`),
  );
  const [late] = await submit(LATECOMER, ['late']);
  // Every task of both tenants has found the endpoint down and waits.
  await eachWaited(BATCHER, batch);
  await waitForEventWhere(fleet.baseUrl, late!, isOutageWait, auth(LATECOMER));
  endpoint.down = false;
  const lateEvents = await waitForEnd(fleet.baseUrl, late!, auth(LATECOMER));
  // The latecomer's wait ended at its last `notBefore` (its next try): from then on it may run, after
  // the backlog already in the queue, the calls in flight and a turn or so of the batch's (not the
  // batch: before, 295 of 300 ran first).
  const lastWait = lateEvents
    .map((message) => message.data)
    .filter(isOutageWait)
    .at(-1)!;
  const dueAt = Date.parse((lastWait.data as { notBefore: string }).notBefore);
  const lateAt = endpoint.served.findIndex((call) => call.prompt === 'late');
  expect(lateAt).toBeGreaterThanOrEqual(0);
  const ahead = endpoint.served.slice(0, lateAt).filter((call) => call.at >= dueAt).length;
  const waitedMs = endpoint.served[lateAt]!.at - dueAt;
  console.log(
    `backlog ${BACKLOG}, ${BATCH} waiting tasks of one tenant: the other tenant's task ran after ${ahead} of them (${waitedMs} ms after its wait ended)`,
  );
  expect(ahead).toBeLessThanOrEqual(2 * BACKLOG);
  await eachEnded(BATCHER, batch);
}, 120_000);

it("lets a tenant's new task run before at most a backlog of another tenant's batch coming back from its retries", async () => {
  endpoint.down = false;
  endpoint.served = [];
  // One tenant's batch fails its first runs; each is tried again 5 s later.
  const batch = await submit(
    BATCHER,
    Array.from({ length: BATCH }, (_, index) => `${FLAKY} ${index}`),
    { attempts: 2, backoff: 5 },
  );
  // Once a backlog's worth of them came back and ran, another tenant submits a task.
  let back = 0;
  const late = await new Promise<string>((resolve, reject) => {
    endpoint.onServed = () => {
      if (++back < 4 * BACKLOG) return;
      endpoint.onServed = () => undefined;
      submit(LATECOMER, ['late again']).then(([id]) => resolve(id!), reject);
    };
  });
  const submittedAt = Date.now();
  await waitForEnd(fleet.baseUrl, late, auth(LATECOMER));
  const lateAt = endpoint.served.findIndex((call) => call.prompt === 'late again');
  expect(lateAt).toBeGreaterThanOrEqual(0);
  const ahead = endpoint.served.slice(0, lateAt).filter((call) => call.at >= submittedAt).length;
  console.log(
    `backlog ${BACKLOG}, ${BATCH} tasks of one tenant back from their retries: the other tenant's task ran after ${ahead} of them (${endpoint.served[lateAt]!.at - submittedAt} ms after its submit)`,
  );
  expect(ahead).toBeLessThanOrEqual(2 * BACKLOG);
  await eachEnded(BATCHER, batch);
}, 120_000);

/** Waits, a slice of streams at a time, until each task ended. */
async function eachEnded(key: string, ids: readonly string[]): Promise<void> {
  for (let from = 0; from < ids.length; from += 50)
    await Promise.all(ids.slice(from, from + 50).map((id) => waitForEnd(fleet.baseUrl, id, auth(key))));
}

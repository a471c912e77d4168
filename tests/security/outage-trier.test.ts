/**
 * The one job of a tenant that tries a down endpoint, and the waits of retries, attacked from outside
 * (round 4). A waiter must not be left waiting for a try that will never come: with the trier cancelled
 * while it waited, the last waiter completed 306,740 ms after the endpoint came back (the trier kept its
 * turn for a call's whole deadline); now the trier keeps its turn 10 s past its wait, and the waiter
 * completes within seconds. A task whose answers are broken every time ends within its attempts though
 * each retry is a new job. Real processes.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { firstUserText, type DoubleReply, type DoubleRequest } from '@agentq/llm';
import { apiCall } from '../helpers/api-call.js';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEventWhere } from '../helpers/sse.js';

const KEY = `t-${randomBytes(8).toString('hex')}`;
const down = new Set<string>();
const calls = new Map<string, number>();
const reply = async (request: DoubleRequest): Promise<DoubleReply> => {
  const prompt = firstUserText(request);
  calls.set(prompt, (calls.get(prompt) ?? 0) + 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  if (prompt.startsWith('BROKEN')) return { fault: 'not-json' };
  if (down.size) return { error: { status: 503, message: 'overloaded', type: 'server_error' } };
  return { content: 'served' };
};

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'outage-trier',
    model: 'm',
    rules: [{ reply }],
    workers: 2,
    pools: 'casual',
    env: {
      AGENTQ_LLM_MAX_RETRIES: '0',
      AGENTQ_CONCURRENCY: '4',
      ...tenantsEnv({ t: { keys: [KEY] } }, { models: { m: { outage: { maxBackoffSeconds: 2 } } } }),
    },
  });
}, 60_000);
afterAll(() => fleet?.stop());

const auth = { authorization: `Bearer ${KEY}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function submit(prompts: string[], extra: Record<string, unknown> = {}): Promise<string[]> {
  const answer = await apiCall<{ tasks: Array<{ id: string }> }>(fleet.baseUrl, KEY, 'POST', '/v1/tasks', {
    tasks: prompts.map((prompt) => ({ prompt, agent: 'casual', ...extra })),
  });
  expect(answer.status).toBe(202);
  return answer.body.tasks.map((task) => task.id);
}
const waited = (id: string) =>
  waitForEventWhere(fleet.baseUrl, id, (e) => e.type === 'task.queued' && e.data.modelUnreachable === true, auth);
async function statusWithin(id: string, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const view = await apiCall<{ status: string }>(fleet.baseUrl, KEY, 'GET', `/v1/tasks/${id}`);
    if (!['queued', 'running'].includes(view.body.status) || Date.now() > deadline) return view.body.status;
    await sleep(200);
  }
}

it('runs a waiter soon after the endpoint is back when every task that could try was cancelled', async () => {
  down.add('x');
  const first = await submit(['W-1', 'W-2', 'W-3', 'W-4']);
  await Promise.all(first.map(waited));
  const [survivor] = await submit(['W-survivor']);
  await waited(survivor!);
  for (const id of first)
    expect((await apiCall(fleet.baseUrl, KEY, 'POST', `/v1/tasks/${id}/cancel`)).status).toBe(202);
  down.clear();
  const backAt = Date.now();
  const status = await statusWithin(survivor!, 20_000);
  console.log(
    `survivor waiter after its tenant's trier was cancelled: ${status} ${Date.now() - backAt} ms after the endpoint came back`,
  );
  expect(status).toBe('completed');
}, 600_000);

it('ends a task whose answers are broken every time within its attempts', async () => {
  const [id] = await submit(['BROKEN every time'], { retry: { attempts: 2, backoff: 1 } });
  const status = await statusWithin(id!, 30_000);
  console.log(`broken-every-time task, attempts 2: ${status}, ${calls.get('BROKEN every time')} calls`);
  expect(status).toBe('failed');
  expect(calls.get('BROKEN every time')).toBeLessThanOrEqual(2 * 3);
}, 60_000);

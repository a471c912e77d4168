/**
 * Fair tenants through two worker processes: while tenant acme has hundreds of tasks queued, tenant
 * beta's new tasks start within a moment (they wait for the short backlog, not for acme's batch) and
 * get about half of the pool while both have work.
 */
import { afterAll, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { startFleet, type Fleet } from '../helpers/fleet.js';
import { waitForEnd } from '../helpers/sse.js';
import { tenantsEnv } from '../helpers/config-file.js';

const A_TASKS = 400;
const B_TASKS = 20;
const MODEL_MS = 40;
const acme = { authorization: 'Bearer key-a', 'content-type': 'application/json' };
const beta = { authorization: 'Bearer key-b', 'content-type': 'application/json' };
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');

let fleet: Fleet | undefined;
afterAll(() => fleet?.stop());

it("starts a second tenant's tasks within a moment while the first has hundreds queued, and shares the pool between them", async () => {
  fleet = await startFleet({
    name: 'fair',
    model: 'fair-model',
    rules: [{ reply: { content: 'done', delayMs: MODEL_MS } }],
    workers: 2,
    pools: 'casual',
    env: {
      ...tenantsEnv({ acme: { keys: ['key-a'] }, beta: { keys: ['key-b'] } }),
      AGENTQ_CONCURRENCY: '4',
      AGENTQ_FAIR_BACKLOG: '8',
    },
  });
  const { baseUrl, double } = fleet;
  const submit = async (headers: Record<string, string>, tasks: unknown[]) =>
    (
      (await (
        await fetch(`${baseUrl}/v1/tasks`, { method: 'POST', headers, body: JSON.stringify({ tasks }) })
      ).json()) as { tasks: Array<{ id: string }> }
    ).tasks.map((task) => task.id);

  const aIds = await submit(
    acme,
    Array.from({ length: A_TASKS }, (_, index) => ({ prompt: `acme ${index}`, agent: 'casual' })),
  );
  // acme's batch is under way: its first task ended.
  await waitForEnd(baseUrl, aIds[0]!, { authorization: 'Bearer key-a' });
  const submittedAt = Date.now();
  const bIds = await submit(
    beta,
    Array.from({ length: B_TASKS }, (_, index) => ({ prompt: `beta ${index}`, agent: 'casual' })),
  );
  await Promise.all(bIds.map((id) => waitForEnd(baseUrl, id, { authorization: 'Bearer key-b' })));
  const bDoneAt = Date.now();

  // beta did not wait for acme's batch: most of acme's tasks had not even started when beta's were done.
  const statuses = (await (
    await fetch(`${baseUrl}/v1/tasks/statuses`, { method: 'POST', headers: acme, body: JSON.stringify({ ids: aIds }) })
  ).json()) as { tasks: Array<{ status: string }> };
  expect(statuses.tasks.filter((task) => task.status === 'queued').length).toBeGreaterThan(A_TASKS / 2);

  // Each beta task's wait, from its submit to its model request: a moment, not acme's batch.
  const requests = double.requests.map((request, index) => ({
    prompt: promptOf(request),
    at: double.receivedAt[index]!,
  }));
  const waits = requests
    .filter((request) => request.prompt.startsWith('beta'))
    .map((request) => request.at - submittedAt)
    .sort((a, b) => a - b);
  expect(waits).toHaveLength(B_TASKS);
  expect(waits.at(-1)!).toBeLessThan(3_000);
  // While beta had work, it had about half of the pool.
  const during = requests.filter((request) => request.at >= submittedAt && request.at <= bDoneAt);
  const share = during.filter((request) => request.prompt.startsWith('beta')).length / during.length;
  expect(share).toBeGreaterThan(0.3);
  expect(share).toBeLessThan(0.7);
}, 60_000);

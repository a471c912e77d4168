/**
 * A retry (POST /v1/tasks/:id/retry, and a bulk retry, which share retryTask) is the same task again: its
 * `retry` policy as its submit asked. A retry that dropped it ran a task that must not repeat (one attempt
 * asked) on its agent's three.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import { tenantsEnv } from '../helpers/config-file.js';
import { startFleet, type Fleet } from '../helpers/fleet.js';

const KEY = `tenant-${randomBytes(8).toString('hex')}`;
let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    name: 'retry-keeps-policy',
    model: 'm',
    rules: [{ reply: () => ({ content: 'x' }) }],
    workers: 0,
    pools: 'casual',
    env: tenantsEnv({ acme: { keys: [KEY] } }),
  });
}, 120_000);
afterAll(() => fleet?.stop());

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
async function call(method: string, route: string, body?: unknown) {
  const response = await fetch(`${fleet.baseUrl}${route}`, {
    method,
    headers,
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> };
}

it.each(['one', 'bulk'])('a %s retry keeps the retry policy its submit asked for', async (how) => {
  const batch = `b-${randomBytes(4).toString('hex')}`;
  const submitted = await call('POST', '/v1/tasks', {
    batch,
    tasks: [{ prompt: 'send the invoice email, once', agent: 'casual', retry: { attempts: 1, backoff: 7 } }],
  });
  expect(submitted.status).toBe(202);
  const id = (submitted.body.tasks as Array<{ id: string }>)[0]!.id;
  expect((await call('POST', `/v1/tasks/${id}/cancel`)).status).toBe(202);
  const original = (await call('GET', `/v1/tasks/${id}`)).body as unknown as TaskView;
  expect(original.status).toBe('cancelled');
  let newId: string;
  if (how === 'one') {
    const retried = await call('POST', `/v1/tasks/${id}/retry`);
    expect(retried.status).toBe(202);
    newId = retried.body.id as string;
  } else {
    expect((await call('POST', '/v1/tasks/bulk', { action: 'retry', batch })).status).toBe(202);
    const list = (await call('GET', `/v1/tasks?batch=${batch}`)).body.tasks as TaskView[];
    newId = list.find((task) => task.id !== id)!.id;
  }
  const retry = (await call('GET', `/v1/tasks/${newId}`)).body as unknown as TaskView;
  console.log(
    `${how} retry: the original's retry ${JSON.stringify(original.retry)}, the retry's ${JSON.stringify(retry.retry)}`,
  );
  expect(retry.retry).toEqual(original.retry);
});

/**
 * Batches: tasks submitted with a batch id are listed as one (and with a status), and one request
 * cancels what of a batch has not ended, or runs its failed tasks again.
 */
import { afterEach, expect, it } from 'vitest';
import type { TaskView } from '@agentq/contract';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitForEnd } from '../helpers/sse.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const post = (path: string, body: unknown) =>
  fetch(`${stack!.api.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const list = async (query: string) =>
  ((await (await fetch(`${stack!.api.url}/v1/tasks?${query}`)).json()) as { tasks: TaskView[] }).tasks;
const submit = async (batch: string, prompts: string[], agent = 'casual') => {
  const response = await post('/v1/tasks', { batch, tasks: prompts.map((prompt) => ({ prompt, agent })) });
  expect(response.status).toBe(202);
  const body = (await response.json()) as { batch: string; tasks: Array<{ id: string }> };
  expect(body.batch).toBe(batch);
  return body.tasks.map((task) => task.id);
};

it('lists a batch, and cancels what of it is queued, leaving other batches alone', async () => {
  stack = await startStack({ pools: [] });
  const nightly = await submit('nightly-2026-11-30', ['one', 'two', 'three']);
  const other = await submit('other', ['four', 'five']);
  expect((await list('batch=nightly-2026-11-30')).map((task) => task.id).sort()).toEqual([...nightly].sort());
  expect(
    (await list('batch=nightly-2026-11-30&status=queued')).every((task) => task.batch === 'nightly-2026-11-30'),
  ).toBe(true);
  // Summaries (the dashboard's list): the same tasks, without their results.
  const full = await list('batch=nightly-2026-11-30');
  expect(full.every((task) => task.result === null)).toBe(true);
  expect(await list('batch=nightly-2026-11-30&fields=summary')).toEqual(
    full.map(({ result: _result, ...summary }) => summary),
  );
  expect((await fetch(`${stack.api.url}/v1/tasks?fields=all`)).status).toBe(400);

  // No filter is a mistake, not "everything".
  const unfiltered = await post('/v1/tasks/bulk', { action: 'cancel' });
  expect(unfiltered.status).toBe(400);
  expect(((await unfiltered.json()) as { error: { message: string } }).error.message).toMatch(
    /name a batch or a status/,
  );
  expect((await post('/v1/tasks/bulk', { action: 'cancel', status: 'completed' })).status).toBe(400);
  expect((await post('/v1/tasks', { batch: 'bad batch!', tasks: [{ prompt: 'x' }] })).status).toBe(400);
  // A misspelt field is refused by name, never dropped: without its batch, this cancel would reach every
  // queued task (the cancel below still finds all three of the batch, and the other batch untouched).
  const misspelt = await post('/v1/tasks/bulk', { action: 'cancel', batc: 'nightly-2026-11-30', status: 'queued' });
  expect(misspelt.status).toBe(400);
  expect(((await misspelt.json()) as { error: { message: string } }).error.message).toBe(
    'The request body is invalid: (root): unknown field "batc": the fields are "action", "batch", "status"',
  );
  // So is a misspelt filter of a list, which would otherwise list every task.
  const listTypo = await fetch(`${stack.api.url}/v1/tasks?batch=nightly-2026-11-30&stauts=queued`);
  expect(listTypo.status).toBe(400);
  expect(((await listTypo.json()) as { error: { message: string } }).error.message).toBe(
    'The query is invalid: (root): unknown parameter "stauts": the parameters are "batch", "status", "limit", "cursor", "q", "fields"',
  );
  // A metadata key "__proto__" (JSON.parse keeps it as a key) is refused by name, never dropped; deeper down it is kept.
  const proto = await fetch(`${stack.api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"tasks":[{"prompt":"x","agent":"casual","metadata":{"__proto__":{"admin":true},"a":1}}]}',
  });
  expect(proto.status).toBe(400);
  expect(((await proto.json()) as { error: { message: string } }).error.message).toBe(
    'The request body is invalid: tasks.0.metadata: has a key "__proto__", which cannot be stored: rename it',
  );
  const nested = await fetch(`${stack.api.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"tasks":[{"prompt":"x","agent":"casual","metadata":{"a":{"__proto__":1}}}]}',
  });
  const [kept] = ((await nested.json()) as { tasks: Array<{ id: string }> }).tasks;
  expect(await (await fetch(`${stack.api.url}/v1/tasks/${kept!.id}`)).text()).toContain(
    '"metadata":{"a":{"__proto__":1}}',
  );
  expect(({} as Record<string, unknown>).admin).toBeUndefined();
  const typo = await post('/v1/tasks', { tasks: [{ prompt: 'x', agent: 'casual', priorty: 9 }] });
  expect(typo.status).toBe(400);
  expect(((await typo.json()) as { error: { message: string } }).error.message).toMatch(
    /^The request body is invalid: tasks\.0: unknown field "priorty": the fields are "prompt", "agent", "priority", .* \(anything of your own goes in "metadata"\)$/,
  );

  const cancelled = await post('/v1/tasks/bulk', { action: 'cancel', batch: 'nightly-2026-11-30', status: 'queued' });
  expect(cancelled.status).toBe(202);
  expect(await cancelled.json()).toEqual({ action: 'cancel', matched: 3, changed: 3, more: false });
  expect((await list('batch=nightly-2026-11-30')).map((task) => task.status)).toEqual([
    'cancelled',
    'cancelled',
    'cancelled',
  ]);
  expect(await list('batch=nightly-2026-11-30&status=queued')).toEqual([]);
  expect((await list('batch=other')).map((task) => [task.id, task.status]).sort()).toEqual(
    other.map((id) => [id, 'queued']).sort(),
  );
});

it('runs the failed tasks of a batch again, as new tasks of the same batch', async () => {
  stack = await startStack({
    pools: ['casual'],
    rules: [
      {
        match: (request) => JSON.stringify(request.messages).includes('fail'),
        reply: { error: { status: 400, message: 'no' } },
      },
      { reply: { content: 'done' } },
    ],
  });
  const ids = await submit('mixed', ['fine 1', 'fail 1', 'fine 2', 'fail 2']);
  await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
  expect((await list('batch=mixed&status=failed')).length).toBe(2);
  const retried = await post('/v1/tasks/bulk', { action: 'retry', batch: 'mixed', status: 'failed' });
  expect(await retried.json()).toEqual({ action: 'retry', matched: 2, changed: 2, more: false });
  const all = await list('batch=mixed');
  expect(all).toHaveLength(6);
  const again = all.filter((task) => task.metadata.retryOf);
  expect(again.map((task) => task.metadata.retryOf).sort()).toEqual(
    (await list('batch=mixed&status=failed'))
      .filter((task) => !task.metadata.retryOf)
      .map((task) => task.id)
      .sort(),
  );
  expect(again.every((task) => task.batch === 'mixed')).toBe(true);

  // Pressed again once the retries failed too: each line of work is retried once, from its newest attempt
  // (the originals, failed and retried already, are left: 4 retries without that).
  await Promise.all(again.map((task) => waitForEnd(stack!.api.url, task.id)));
  const second = await post('/v1/tasks/bulk', { action: 'retry', batch: 'mixed', status: 'failed' });
  expect(await second.json()).toEqual({ action: 'retry', matched: 2, changed: 2, more: false });
  const third = (await list('batch=mixed')).filter((task) => !all.some((seen) => seen.id === task.id));
  expect(third.map((task) => task.metadata.retryOf).sort()).toEqual(again.map((task) => task.id).sort());
});

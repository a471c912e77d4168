/**
 * A pool's queue holds a short backlog (AGENTQ_FAIR_BACKLOG); the rest of a submit waits in its tenant's
 * list, and a worker admits more as its jobs end. It must do so whatever it saw last: a worker whose
 * own last admission found nothing waiting, and that trusted it, left the tasks of the next submit
 * beyond the backlog waiting for its periodic admission (up to a second; in B1 about a fifth of the
 * run). Here that period is ten minutes: the tasks end only if the worker admits as its jobs end.
 */
import { afterEach, expect, it } from 'vitest';
import { waitForEnd } from '../helpers/sse.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

it('admits the tasks beyond the backlog as jobs end, though its own last admission found nothing waiting', async () => {
  stack = await startStack({
    pools: ['casual'],
    env: { AGENTQ_FAIR_BACKLOG: '1' },
    worker: { admitIntervalMs: 600_000 },
    rules: [{ reply: { content: 'done' } }],
  });
  const { url } = stack.api;
  // The submit admits the first; the worker admits the second as the first ends, and finds no more
  // waiting: once the second ended, the worker's last admission has said so.
  const first = await stack.submit([
    { prompt: 'first 1', agent: 'casual' },
    { prompt: 'first 2', agent: 'casual' },
  ]);
  await waitForEnd(url, first[1]!);
  // A submit on the API: it admits one; the worker must admit the other nine as jobs end.
  const batch = await stack.submit(
    Array.from({ length: 10 }, (_, index) => ({ prompt: `batch ${index}`, agent: 'casual' })),
  );
  const ends = await Promise.all(batch.map((id) => waitForEnd(url, id)));
  expect(ends.map((events) => events.at(-1)?.event)).toEqual(batch.map(() => 'task.completed'));
  expect(stack.double.requests).toHaveLength(12);
});

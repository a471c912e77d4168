import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.js';
import { SEARCHES_RUNNING, SEARCHES_WAITING, SearchTurns } from './search-turns.js';

/** A search that ends when told to. */
function heldSearch() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { end, search: async () => ended };
}

describe('search turns', () => {
  it("runs a tenant's searches 2 at a time, lets 8 wait, refuses the next, and leaves other tenants alone", async () => {
    const turns = new SearchTurns();
    const started: number[] = [];
    const held = Array.from({ length: SEARCHES_RUNNING + SEARCHES_WAITING }, () => heldSearch());
    const runs = held.map(({ search }, index) =>
      turns.run('acme', async () => {
        started.push(index);
        await search();
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);

    const refused = await turns.run('acme', async () => 'ran').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: 'limit_reached', retryAfterSeconds: 1 });
    expect((refused as ApiError).message).toMatch(/one search at a time/);
    expect(await turns.run('beta', async () => 'ran')).toBe('ran');

    // Each search that ends hands its turn to the next waiting one, in order.
    held[0]!.end();
    await runs[0];
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    for (const { end } of held) end();
    await Promise.all(runs);
    expect(started).toEqual(held.map((_, index) => index));
    expect(await turns.run('acme', async () => 'ran again')).toBe('ran again');
  });

  it('does not run a search whose client left while it waited', async () => {
    const turns = new SearchTurns();
    const held = Array.from({ length: SEARCHES_RUNNING }, () => heldSearch());
    const runs = held.map(({ search }) => turns.run('acme', search));
    const gone = new AbortController();
    let ran = false;
    const waiting = turns.run('acme', async () => (ran = true), gone.signal);
    gone.abort();
    for (const { end } of held) end();
    await Promise.all(runs);
    expect(await waiting).toBeUndefined();
    expect(ran).toBe(false);
  });

  it('refuses a search when its tenant holds every lease over the API processes, and lets each lease go', async () => {
    let held = 0;
    const turns = new SearchTurns({
      lease: async () => {
        if (held >= SEARCHES_RUNNING) return undefined;
        held += 1;
        return { release: async () => void (held -= 1) };
      },
    });
    // Another process's searches hold every lease.
    held = SEARCHES_RUNNING;
    const refused = await turns.run('acme', async () => 'ran').catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'limit_reached', retryAfterSeconds: 1 });
    expect((refused as ApiError).message).toMatch(/API's processes/);
    held = 0;
    expect(await turns.run('acme', async () => 'ran')).toBe('ran');
    expect(held).toBe(0);
  });
});

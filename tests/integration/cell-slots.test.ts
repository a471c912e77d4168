/**
 * A pool's slots shared by its cells' BullMQ workers (cell-slots.ts), on real BullMQ workers and Redis:
 * with every slot taken, the process takes about one job a cell beyond them, not what each cell's
 * worker would fetch at the pool's concurrency, and the cells share the slots evenly.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CellSlots } from '../../apps/worker/src/cell-slots.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';

const CONCURRENCY = 4;
const CELLS = 3;

describe("a pool's slots across its cells", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('holds at most a job a cell beyond its slots, and shares them evenly', async () => {
    const prefix = freshPrefix('slots');
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    cleanups.push(async () => {
      connection.disconnect();
      await deletePrefix(prefix);
    });
    const queues = Array.from(
      { length: CELLS },
      (_, cell) => new Queue('pool', { connection, prefix: `${prefix}:${cell}` }),
    );
    for (const queue of queues)
      await queue.addBulk(Array.from({ length: 30 }, (_, index) => ({ name: 'job', data: { index } })));
    // Each job runs until the test lets it end; each start is awaited, not slept on.
    const running: Array<{ cell: number; end: () => void }> = [];
    const startedBy = Array.from({ length: CELLS }, () => 0);
    let started: (() => void) | undefined;
    const nextStart = () => new Promise<void>((resolve) => (started = resolve));
    const slots = new CellSlots(CONCURRENCY, CELLS);
    let starts = nextStart();
    const workers = queues.map(
      (_queue, cell) =>
        new Worker(
          'pool',
          slots.wrap(
            () =>
              new Promise<void>((end) => {
                running.push({ cell, end });
                startedBy[cell]!++;
                started?.();
              }),
            cell,
          ),
          { connection, prefix: `${prefix}:${cell}`, concurrency: CONCURRENCY },
        ),
    );
    slots.bound(workers);
    cleanups.push(async () => {
      for (const { end } of running.splice(0)) end();
      await Promise.all(workers.map((worker) => worker.close(true)));
    });
    const taken = async () =>
      (await Promise.all(queues.map((queue) => queue.getActiveCount()))).reduce((sum, count) => sum + count, 0);
    while (running.length < CONCURRENCY) {
      await starts;
      starts = nextStart();
    }
    let most = 0;
    for (let round = 0; round < 45; round++) {
      most = Math.max(most, await taken());
      expect(running).toHaveLength(CONCURRENCY);
      running.shift()!.end();
      await starts;
      starts = nextStart();
    }
    // Each cell's worker at the pool's concurrency would take 3 x 4 = 12 (8 waiting).
    expect(most).toBeLessThanOrEqual(CONCURRENCY + CELLS);
    // A cell below its even share takes a job to wait, and a slot let go goes to the oldest waiting:
    // the slots even out (of 49 starts, 17, 16 and 16 in each run here; 11 to 23 without the share).
    for (const count of startedBy) expect(count).toBeGreaterThanOrEqual(13);
  });
});

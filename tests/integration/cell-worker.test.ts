/**
 * CellWorker (apps/worker/src/cell-worker.ts) rests on an internal of BullMQ: it overrides
 * `Worker.processJob`, which is not documented, to answer as a job ends whether the next one comes with
 * that end (its third argument, `fetchNextCallback`, which `handleCompleted` and `handleFailed` ask).
 * BullMQ is pinned to the version it was checked against; when someone moves the pin, these fail and say
 * what to check, on a real BullMQ worker and Redis.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BULLMQ_CHECKED, CellWorker } from '../../apps/worker/src/cell-worker.js';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';

const root = path.join(import.meta.dirname, '../..');
const WHAT_TO_CHECK =
  `CellWorker (apps/worker/src/cell-worker.ts) overrides BullMQ's internal Worker.processJob(job, token, ` +
  `fetchNextCallback), checked against bullmq ${BULLMQ_CHECKED}. In the new bullmq's src/classes/worker.ts, ` +
  `check that processJob still takes the callback third and hands it to handleCompleted and handleFailed, ` +
  `which ask it whether the next job comes with moveToCompleted / moveToFailed; then run ` +
  `tests/integration/cell-slots.test.ts, and set BULLMQ_CHECKED and the exact pins in package.json.`;

/** The version of bullmq a workspace resolves, read from its package.json. */
function installedBullmq(workspace: string): string {
  const entry = createRequire(path.join(root, workspace, 'package.json')).resolve('bullmq');
  const folder = entry.slice(0, entry.lastIndexOf(`${path.sep}bullmq${path.sep}`) + '/bullmq'.length);
  return (JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8')) as { version: string }).version;
}

function pinnedBullmq(workspace: string): string | undefined {
  const manifest = JSON.parse(readFileSync(path.join(root, workspace, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  return manifest.dependencies?.bullmq;
}

describe("CellWorker on BullMQ's internals", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('is pinned to the BullMQ it was checked against, exactly', () => {
    for (const workspace of ['apps/worker', 'packages/scheduling']) {
      expect(pinnedBullmq(workspace), `${workspace}/package.json pins bullmq loosely. ${WHAT_TO_CHECK}`).toBe(
        BULLMQ_CHECKED,
      );
      expect(installedBullmq(workspace), `${workspace} runs another bullmq. ${WHAT_TO_CHECK}`).toBe(BULLMQ_CHECKED);
    }
  });

  it('overrides a processJob of the shape it was written against', () => {
    const prototype = Worker.prototype as unknown as Record<string, unknown>;
    for (const [method, arity] of [
      // (job, token, fetchNextCallback = () => true): a parameter with a default is not counted.
      ['processJob', 2],
      // (result or error, job, token, fetchNextCallback = () => true, span)
      ['handleCompleted', 3],
      ['handleFailed', 3],
    ] as const) {
      expect(typeof prototype[method], `Worker.prototype.${method} is gone. ${WHAT_TO_CHECK}`).toBe('function');
      expect(
        (prototype[method] as (...args: unknown[]) => unknown).length,
        `Worker.prototype.${method} takes other arguments. ${WHAT_TO_CHECK}`,
      ).toBe(arity);
    }
  });

  /**
   * Four jobs, one at a time, the third failing, on a CellWorker whose `mayTake` answers `answer`: how
   * often it was asked, and how many fetches the worker made in calls of their own (not with a job's end).
   */
  const run = async (answer: boolean) => {
    const prefix = freshPrefix('cell-worker');
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    cleanups.push(async () => {
      connection.disconnect();
      await deletePrefix(prefix);
    });
    const queue = new Queue('pool', { connection, prefix });
    await queue.addBulk([1, 2, 3, 4].map((index) => ({ name: 'job', data: { index } })));
    let asked = 0;
    let ownFetches = 0;
    class CountedWorker extends CellWorker {
      protected override moveToActive(token: string, name?: string): Promise<Job> {
        ownFetches++;
        return super.moveToActive(token, name);
      }
    }
    const ran: number[] = [];
    let ended = 0;
    let allEnded: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allEnded = resolve));
    const worker = new CountedWorker(
      'pool',
      async (job: Job<{ index: number }>) => {
        ran.push(job.data.index);
        if (job.data.index === 3) throw new Error('the third fails');
      },
      { connection, prefix, concurrency: 1 },
      () => {
        asked++;
        return answer;
      },
    );
    cleanups.push(() => worker.close(true));
    const end = () => {
      if (++ended === 4) allEnded();
    };
    worker.on('completed', end);
    worker.on('failed', end);
    await done;
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 3, failed: 1 });
    return { ran: ran.sort(), asked, ownFetches };
  };

  it("asks mayTake at each job's end, completed or failed, and follows its answer", async () => {
    const taking = await run(true);
    expect(taking.ran, `CellWorker ran other jobs. ${WHAT_TO_CHECK}`).toEqual([1, 2, 3, 4]);
    expect(taking.asked, `mayTake was asked ${taking.asked} times for 4 ends. ${WHAT_TO_CHECK}`).toBe(4);
    // The first fetch is the worker's own; jobs 2 to 4 came with an end (one more own fetch may start
    // after the last end, waiting for work).
    expect(taking.ownFetches, `jobs did not come with the ends mayTake allowed. ${WHAT_TO_CHECK}`).toBeLessThanOrEqual(
      2,
    );

    const declining = await run(false);
    expect(declining.asked, `mayTake was asked ${declining.asked} times for 4 ends. ${WHAT_TO_CHECK}`).toBe(4);
    expect(
      declining.ownFetches,
      `jobs came with ends mayTake declined: BullMQ no longer asks it. ${WHAT_TO_CHECK}`,
    ).toBeGreaterThanOrEqual(4);
  });
});

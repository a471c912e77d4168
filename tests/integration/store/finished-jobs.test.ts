/**
 * The throughput the dashboard draws, as the workers count it (finished-jobs.ts), against a real
 * Redis: several counters add up, each minute apart, a count survives a flush that failed, and a
 * minute's counts expire.
 */
import { afterAll, expect, it } from 'vitest';
import { connectRedis, createKeys, FinishedJobs, readFinishedJobs } from '@agentq/store';
import { deletePrefix, freshPrefix, redisUrl } from '../../helpers/redis.js';

const prefix = freshPrefix('finished');
const keys = createKeys(prefix);
const redis = connectRedis({ url: redisUrl() });
afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

const MINUTE = 60_000;
const now = Math.floor(Date.now() / MINUTE) * MINUTE + 30_000;

it('adds up what every worker counted, by minute and outcome, the running minute last', async () => {
  const errors: Error[] = [];
  const [first, second] = [0, 1].map(() => new FinishedJobs(redis, keys, (error) => errors.push(error), 60_000));
  first!.count('casual', 'completed', now);
  first!.count('casual', 'completed', now - MINUTE);
  first!.count('casual', 'failed', now - 3 * MINUTE);
  second!.count('casual', 'completed', now);
  second!.count('coder', 'completed', now);
  // Nothing is in Redis before a flush: a job costs no command of its own.
  expect((await readFinishedJobs(redis, keys, 'casual', 5, now)).total).toEqual({ completed: 0, failed: 0 });
  await Promise.all([first!.close(), second!.close()]);
  expect(await readFinishedJobs(redis, keys, 'casual', 5, now)).toEqual({
    completed: [0, 0, 0, 1, 2],
    failed: [0, 1, 0, 0, 0],
    total: { completed: 3, failed: 1 },
  });
  expect((await readFinishedJobs(redis, keys, 'coder', 1, now)).completed).toEqual([1]);
  // Each minute's counts go away on their own; the totals stay.
  const ttl = await redis.pttl(keys.finishedJobs('casual', Math.floor(now / MINUTE)));
  expect(ttl).toBeGreaterThan(110 * MINUTE);
  expect(ttl).toBeLessThanOrEqual(120 * MINUTE);
  expect(await redis.pttl(keys.finishedJobsTotal('casual'))).toBe(-1);
  expect(errors).toEqual([]);
});

it('keeps what it counted when Redis refuses a flush, and adds it at the next', async () => {
  const other = createKeys(`${prefix}:retry`);
  const errors: Error[] = [];
  const counter = new FinishedJobs(redis, other, (error) => errors.push(error), 60_000);
  counter.count('casual', 'completed', now);
  // A minute's key that is not a hash: its HINCRBY is refused (WRONGTYPE), as a write is when Redis is full.
  await redis.set(other.finishedJobs('casual', Math.floor(now / MINUTE)), 'not a hash');
  await counter.flush();
  expect(errors.map((error) => error.message)).toEqual([expect.stringContaining('WRONGTYPE')]);
  await redis.del(other.finishedJobs('casual', Math.floor(now / MINUTE)));
  counter.count('casual', 'completed', now);
  await counter.close();
  // The minute's count was added once the key could take it, the total (added the first time) once.
  expect(await readFinishedJobs(redis, other, 'casual', 1, now)).toEqual({
    completed: [2],
    failed: [0],
    total: { completed: 2, failed: 0 },
  });
});

/** The shared limits' scripts against a real Redis: what is admitted, when the rest may ask again, and settling. */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { createKeys, connectRedis } from '@agentq/store';
import { SharedRateLimits, type Reservation } from './rate-limits.js';

const prefix = freshPrefix('limits');
let redis: Redis;
let limits: SharedRateLimits;
beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
  limits = new SharedRateLimits(redis, createKeys(prefix));
});
afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

const admitted = (reservation: Reservation) => reservation.admitted;

it('admits requests up to the limit of a window, and tells the next when the oldest leaves it', async () => {
  const limit = { requests: 3, windowMs: 10_000 };
  const first = await limits.reserve('rpm-model', limit, 10);
  const rest = [await limits.reserve('rpm-model', limit, 10), await limits.reserve('rpm-model', limit, 10)];
  expect([first, ...rest].every(admitted)).toBe(true);
  const refused = await limits.reserve('rpm-model', limit, 10);
  expect(refused.admitted).toBe(false);
  const [seconds, micros] = await redis.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  // The oldest call was admitted a moment ago: the next fits a window after it.
  expect(refused.admitted ? 0 : refused.retryAt - now).toBeGreaterThan(9_000);
  expect(refused.admitted ? 0 : refused.retryAt - now).toBeLessThanOrEqual(10_000);
});

it('admits tokens up to the limit, counts what calls used once they settle, and lets a call larger than the limit run alone', async () => {
  const limit = { tokens: 1_000, windowMs: 10_000 };
  const big = await limits.reserve('tpm-model', limit, 800);
  expect(big.admitted).toBe(true);
  expect((await limits.reserve('tpm-model', limit, 300)).admitted).toBe(false);
  // It used less than it reserved: the difference is free again.
  if (big.admitted) await limits.settle(big, 500);
  expect((await limits.reserve('tpm-model', limit, 300)).admitted).toBe(true);
  expect((await limits.reserve('tpm-model', limit, 300)).admitted).toBe(false);
  // Larger than the limit itself: it waits for an empty window, never forever.
  const huge = await limits.reserve('huge-model', limit, 5_000);
  expect(huge.admitted).toBe(true);
  expect((await limits.reserve('huge-model', limit, 5_000)).admitted).toBe(false);
});

it('blocks a model for everyone for as long as the provider said, and never shortens a block', async () => {
  const limit = { requests: 100, windowMs: 10_000 };
  const until = await limits.block('blocked-model', 2_000);
  const refused = await limits.reserve('blocked-model', limit, 1);
  expect(refused).toEqual({ admitted: false, retryAt: until });
  expect(await limits.block('blocked-model', 10)).toBe(until);
  expect((await limits.reserve('other-model', limit, 1)).admitted).toBe(true);
});

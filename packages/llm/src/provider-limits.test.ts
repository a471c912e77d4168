import { expect, it } from 'vitest';
import { durationMs, MAX_PROVIDER_WAIT_MS, providerLimitsOf, providerWaitMs } from './provider-limits.js';

it("reads a provider's reset durations as OpenAI writes them", () => {
  expect(durationMs('6m0s')).toBe(360_000);
  expect(durationMs('1s')).toBe(1_000);
  expect(durationMs('20ms')).toBe(20);
  expect(durationMs('1.5s')).toBe(1_500);
  expect(durationMs('1h2m3s')).toBe(3_723_000);
  expect(durationMs('2')).toBe(2_000);
  for (const bad of ['', 'soon', '5 minutes', '1s later', '-1s']) expect(durationMs(bad)).toBeUndefined();
});

it('reads what is left and when it resets, and nothing from an answer without the headers', () => {
  const headers = new Headers({
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-reset-requests': '12ms',
    'x-ratelimit-remaining-tokens': '1500',
    'x-ratelimit-reset-tokens': '3s',
  });
  expect(providerLimitsOf(headers)).toEqual({
    remainingRequests: 0,
    remainingTokens: 1_500,
    resetRequestsMs: 12,
    resetTokensMs: 3_000,
  });
  expect(providerLimitsOf(new Headers({ 'content-type': 'application/json' }))).toBeUndefined();
  expect(providerLimitsOf(new Headers({ 'x-ratelimit-remaining-tokens': 'lots' }))).toBeUndefined();
});

it('believes a reset of at most 5 minutes: one broken answer cannot hold every worker back for years', () => {
  const headers = new Headers({
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-reset-requests': '999999999s',
    'x-ratelimit-remaining-tokens': '0',
    'x-ratelimit-reset-tokens': '6m0s',
  });
  expect(providerLimitsOf(headers)).toEqual({
    remainingRequests: 0,
    remainingTokens: 0,
    resetRequestsMs: MAX_PROVIDER_WAIT_MS,
    resetTokensMs: MAX_PROVIDER_WAIT_MS,
  });
});

it('reads a Retry-After given as an HTTP date as the wait until it, within the longest believed', () => {
  const now = Date.parse('2026-12-07T10:00:00Z');
  expect(providerWaitMs('Mon, 07 Dec 2026 10:00:20 GMT', now)).toBe(20_000);
  expect(providerWaitMs('Mon, 07 Dec 2026 09:59:00 GMT', now)).toBe(0);
  expect(providerWaitMs('Fri, 01 Jan 2100 00:00:00 GMT', now)).toBe(MAX_PROVIDER_WAIT_MS);
  for (const bad of ['Mon, 99 Foo 2026', 'garbage', '-5']) expect(providerWaitMs(bad, now)).toBeUndefined();
});

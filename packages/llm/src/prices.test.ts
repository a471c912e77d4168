import { describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES, priceOf } from './prices.js';

describe('prices', () => {
  it('prices a model by its name, or by the longest name it extends', () => {
    expect(priceOf('gpt-4o-mini', DEFAULT_PRICES)).toEqual({ input: 0.15, cachedInput: 0.075, output: 0.6 });
    // A dated name is its model's, and gpt-4o-mini is not priced as gpt-4o.
    expect(priceOf('gpt-4o-mini-2024-07-18', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceOf('gpt-4o-2024-08-06', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['gpt-4o']);
    // A local model, or a name that only starts like one: no price.
    expect(priceOf('qwen2.5-coder:7b', DEFAULT_PRICES)).toBeUndefined();
    expect(priceOf('gpt-4oops', DEFAULT_PRICES)).toBeUndefined();
    expect(priceOf('constructor', DEFAULT_PRICES)).toBeUndefined();
  });

  it('costs cached prompt tokens at their own price, and nothing without a price', () => {
    const price = { input: 2, cachedInput: 1, output: 10 };
    expect(costOf({ promptTokens: 1_000, cachedPromptTokens: 400, completionTokens: 100 }, price)).toBeCloseTo(
      (600 * 2 + 400 * 1 + 100 * 10) / 1e6,
      12,
    );
    expect(costOf({ promptTokens: 1_000, completionTokens: 0 }, { input: 3, output: 1 })).toBeCloseTo(0.003, 12);
    // A provider that says more cached tokens than prompt tokens is not believed past the prompt.
    expect(costOf({ promptTokens: 10, cachedPromptTokens: 50, completionTokens: 0 }, price)).toBeCloseTo(10 / 1e6, 12);
    expect(costOf({ promptTokens: 1_000, completionTokens: 100 }, undefined)).toBe(0);
  });
});

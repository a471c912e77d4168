/**
 * What a model call costs: a price table in USD per million tokens (input, cached input, output), and
 * the cost of a call's usage. The defaults are the providers' list prices for their common models
 * (OpenAI, DeepSeek) as of 2025; the configuration file's models.<model>.price adds or replaces
 * entries. A model the table does not know (a local model) costs 0.
 */
import type { TokenUsage } from '@agentq/protocol';

export interface ModelPrice {
  /** USD per million prompt tokens. */
  input: number;
  /** USD per million prompt tokens served from the provider's cache. Default: `input`. */
  cachedInput?: number;
  /** USD per million completion tokens. */
  output: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

export const DEFAULT_PRICES: PriceTable = {
  'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10 },
  'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
  'deepseek-chat': { input: 0.27, cachedInput: 0.07, output: 1.1 },
  'deepseek-reasoner': { input: 0.55, cachedInput: 0.14, output: 2.19 },
};

/**
 * The price of a model: its own entry, or that of the longest name it extends (`gpt-4o-mini-2024-07-18`
 * is priced as `gpt-4o-mini`); undefined when the table knows neither.
 */
export function priceOf(model: string, prices: PriceTable): ModelPrice | undefined {
  if (Object.hasOwn(prices, model)) return prices[model];
  let best: string | undefined;
  for (const name of Object.keys(prices)) {
    if (model.startsWith(name) && /^[-:@.]/.test(model.slice(name.length)) && name.length > (best?.length ?? 0))
      best = name;
  }
  return best === undefined ? undefined : prices[best];
}

/** The cost of a call's usage at `price`, in USD (0 without a price). */
export function costOf(usage: TokenUsage, price: ModelPrice | undefined): number {
  if (!price) return 0;
  const cached = Math.min(usage.cachedPromptTokens ?? 0, usage.promptTokens);
  return (
    ((usage.promptTokens - cached) * price.input +
      cached * (price.cachedInput ?? price.input) +
      usage.completionTokens * price.output) /
    1_000_000
  );
}

/**
 * The models a worker calls, by name: the pools' configured ones and those tasks name on submit (the
 * configuration file's `models`). Each is made once, priced, and drawn from the shared limits when
 * models.<model>.limits sets them.
 */
import { modelLimits, modelPrices, type Config } from '@agentq/config';
import { createOpenAIModel, DEFAULT_PRICES, type LanguageModel } from '@agentq/llm';
import type { SharedRateLimits } from '@agentq/scheduling';
import { rateLimitedModel } from './rate-limited-model.js';

export type ModelCatalog = (name: string) => LanguageModel;

export function modelCatalog(config: Config, shared: SharedRateLimits, override?: LanguageModel): ModelCatalog {
  const made = new Map<string, LanguageModel>();
  const prices = { ...DEFAULT_PRICES, ...modelPrices(config) };
  const limits = modelLimits(config);
  const make = (name: string): LanguageModel => {
    const model =
      override ??
      createOpenAIModel({
        model: name,
        ...(config.OPENAI_BASE_URL ? { baseURL: config.OPENAI_BASE_URL } : {}),
        ...(config.OPENAI_API_KEY ? { apiKey: config.OPENAI_API_KEY } : {}),
        timeoutMs: config.AGENTQ_LLM_TIMEOUT_MS,
        maxRetries: config.AGENTQ_LLM_MAX_RETRIES,
        deadlineMs: config.AGENTQ_LLM_DEADLINE_MS,
        prices,
        ...(config.AGENTQ_MAX_OUTPUT_TOKENS ? { maxOutputTokens: config.AGENTQ_MAX_OUTPUT_TOKENS } : {}),
      });
    const limit = limits[model.modelId];
    return limit
      ? rateLimitedModel(model, { limits: shared, limit, maxOutputTokens: config.AGENTQ_MAX_OUTPUT_TOKENS })
      : model;
  };
  return (name) => {
    let model = made.get(name);
    if (!model) made.set(name, (model = make(name)));
    return model;
  };
}

/**
 * A model with others to fall back to (an agent's `fallbackModels`): a call the first one fails for
 * good (its retries used up, refused, its deadline passed) is asked of the next, in turn. A cancelled
 * call is not; when every model failed, the last one's error is what the caller sees (a 429 from all
 * of them still pauses the pool).
 */
import { LlmError } from './errors.js';
import type { LanguageModel, ModelRequest, ModelResponse } from './language-model.js';

export function withFallbacks(models: readonly LanguageModel[]): LanguageModel {
  const [first, ...rest] = models;
  if (!first) throw new Error('withFallbacks needs at least one model');
  if (!rest.length) return first;
  return {
    modelId: first.modelId,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      let failure: unknown;
      // What one model streamed before it failed is void once the next answers.
      let streamed = false;
      const onDelta = request.onDelta;
      const asked: ModelRequest = onDelta
        ? {
            ...request,
            onDelta: (delta) => {
              streamed = !delta.restart;
              onDelta(delta);
            },
          }
        : request;
      for (const model of models) {
        if (streamed) {
          streamed = false;
          onDelta?.({ restart: true });
        }
        try {
          return await model.generate(asked);
        } catch (error) {
          if (!(error instanceof LlmError) || error.code === 'aborted' || request.signal?.aborted) throw error;
          failure = error;
        }
      }
      throw failure;
    },
  };
}

/**
 * A model whose calls draw on the provider's limits shared by every worker (models.<model>.limits). Before a
 * call, its expected tokens are reserved (the counted prompt and tools, plus its max output); after it, they
 * settle to what the provider reported. A call that does not fit, or a provider whose x-ratelimit
 * headers say nothing is left, throws `WaitForRateLimit`: its run gives its worker slot back and the job
 * comes back when the call can fit. A 429 is not taken for the whole model's: a tenant's own call can
 * draw one (a prompt too large for the provider's tokens per minute), so it is thrown on, for the
 * outage guard to hold that tenant's calls of the model only (outage-guarded-model.ts), as without limits.
 */
import { AgentqError } from '@agentq/contract';
import { countMessageTokens, loadTokenizer } from '@agentq/core';
import { LlmError, type LanguageModel, type ModelRequest, type ModelResponse, type ToolSpec } from '@agentq/llm';
import type { ModelLimit, SharedRateLimits } from '@agentq/scheduling';

/** Reserved for a call's answer when AGENTQ_MAX_OUTPUT_TOKENS does not bound it. */
export const UNBOUNDED_OUTPUT_RESERVE = 1_000;

/** The tools offered count as prompt tokens too (providers count their schemas); a run's list is counted once. */
const toolCounts = new WeakMap<readonly ToolSpec[], number>();
async function toolTokens(tools: readonly ToolSpec[] | undefined): Promise<number> {
  if (!tools?.length) return 0;
  let tokens = toolCounts.get(tools);
  if (tokens === undefined) toolCounts.set(tools, (tokens = (await loadTokenizer())(JSON.stringify(tools))));
  return tokens;
}

export class WaitForRateLimit extends AgentqError {
  readonly code = 'rate_limited';
  readonly retryable = true;
  constructor(
    readonly model: string,
    /** When the call may fit (ms since the epoch). */
    readonly retryAt: number,
    why: string,
  ) {
    super(`waiting for rate limit of ${model}: ${why}`);
  }
}

export function rateLimitedModel(
  model: LanguageModel,
  options: { limits: SharedRateLimits; limit: ModelLimit; maxOutputTokens?: number | undefined },
): LanguageModel {
  const { limits, limit } = options;
  const name = model.modelId;
  return {
    modelId: name,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const expected =
        (await countMessageTokens(request.messages)) +
        (await toolTokens(request.tools)) +
        (options.maxOutputTokens ?? UNBOUNDED_OUTPUT_RESERVE);
      const reservation = await limits.reserve(name, limit, expected);
      if (!reservation.admitted)
        throw new WaitForRateLimit(
          name,
          reservation.retryAt,
          `its shared limit (models.${name}.limits) is used up for now`,
        );
      let response: ModelResponse;
      try {
        response = await model.generate(request);
      } catch (error) {
        // Nothing reached the provider's count, or it refused it: the reservation frees its tokens.
        if (error instanceof LlmError && error.code === 'rate_limited') await limits.settle(reservation, 0);
        throw error;
      }
      const { usage, limits: stated } = response;
      await limits.settle(reservation, usage ? usage.promptTokens + usage.completionTokens : expected);
      // Nothing left at the provider: nobody calls it again before it resets.
      if (stated?.remainingRequests === 0 && stated.resetRequestsMs) await limits.block(name, stated.resetRequestsMs);
      if (stated?.remainingTokens !== undefined && stated.remainingTokens < expected && stated.resetTokensMs)
        await limits.block(name, stated.resetTokensMs);
      return response;
    },
  };
}

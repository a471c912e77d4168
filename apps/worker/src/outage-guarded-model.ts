/**
 * A task's model, held to its endpoint's outages (scheduling's model-outages.ts), per tenant: before a
 * call, it asks whether the endpoint is known to be down; when it is and another call tries it, this
 * call does not go out and throws `WaitForModel`, as does a call that could not reach the endpoint, or
 * that drew a 429 (after the SDK's own quick retries, and the fallback models'; a 429 waits out its
 * Retry-After). Its run gives its worker slot back and its job waits, spending no attempt (hold-task.ts,
 * which bounds the 429s in a row); the call that gets the endpoint's answer wakes every job that waited
 * for it. A 429 so holds only its tenant's calls of that model: others run on.
 */
import { AgentqError } from '@agentq/contract';
import { LlmError, type LanguageModel, type ModelRequest, type ModelResponse } from '@agentq/llm';
import type { ModelOutages, OutageCall, OutageWait } from '@agentq/scheduling';

export class WaitForModel extends AgentqError {
  readonly code = 'model_unreachable';
  readonly retryable = true;
  constructor(
    readonly model: string,
    /** Until when its job waits at the latest, and since when the endpoint is down (Redis time). */
    readonly wait: OutageWait,
    /** What the last call that could not reach the endpoint (or drew a 429) was told. */
    readonly lastError: string,
    options: {
      cause?: unknown;
      /** The last failed call drew a 429 (a rate limit), not a silence or a 5xx. */
      rateLimited: boolean;
      /** This call went out and drew that 429 itself (it counts toward its task's 429s in a row). */
      drew429?: boolean;
    },
  ) {
    super(
      options.rateLimited
        ? `waiting for model ${model} to take calls again after a 429: ${lastError}`
        : `waiting for the endpoint of model ${model} to answer again: ${lastError}`,
      { cause: options.cause },
    );
    this.rateLimited = options.rateLimited;
    this.drew429 = options.drew429 ?? false;
  }

  readonly rateLimited: boolean;
  readonly drew429: boolean;
}

export function outageGuardedModel(
  model: LanguageModel,
  options: {
    outages: ModelOutages;
    /** Whose call (the task's tenant) and which job makes it (how it is woken). */
    caller: Omit<OutageCall, 'model'>;
    /** Wakes the jobs that waited (as `ModelOutages` lists them). */
    wake: (members: readonly string[]) => Promise<void>;
    /** Its task waited for an outage before: its first call asks whether it is its turn. */
    waitedBefore: boolean;
    /** Told when a call gets its answer (its task's 429s in a row end). */
    answered?: () => void;
  },
): LanguageModel {
  const { outages, wake } = options;
  const call: OutageCall = { ...options.caller, model: model.modelId };
  if (options.waitedBefore) outages.suspect(call);
  return {
    modelId: model.modelId,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const entry = await outages.enter(call);
      if (entry.kind === 'wait')
        throw new WaitForModel(call.model, entry, entry.lastError, { rateLimited: entry.rateLimited });
      let response: ModelResponse;
      try {
        response = await model.generate(request);
      } catch (error) {
        const stopped = request.signal?.aborted || (error instanceof LlmError && error.code === 'aborted');
        if (error instanceof LlmError && error.unreachable && !stopped) {
          const wait = await outages.failed(call, error.message);
          throw new WaitForModel(call.model, wait, error.message, { cause: error, rateLimited: false });
        }
        if (error instanceof LlmError && error.code === 'rate_limited' && !stopped) {
          const waitMs = error.retryAfterSeconds === undefined ? undefined : error.retryAfterSeconds * 1000;
          const wait = await outages.failed(call, error.message, { rateLimited: true, waitMs });
          throw new WaitForModel(call.model, wait, error.message, { cause: error, rateLimited: true, drew429: true });
        }
        if (entry.kind === 'probe') {
          // A refusal, a broken body: the endpoint answered. Cancelled, or past its deadline: no word
          // from it, and the next try is another job's.
          const answered = error instanceof LlmError && !stopped && error.code !== 'deadline_exceeded';
          const waiter = answered ? await outages.recovered(call) : await outages.left(call);
          await wake(Array.isArray(waiter) ? waiter : waiter ? [waiter] : []);
        }
        throw error;
      }
      if (entry.kind === 'probe') await wake(await outages.recovered(call));
      options.answered?.();
      return response;
    },
  };
}

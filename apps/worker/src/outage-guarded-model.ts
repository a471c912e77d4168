/**
 * A task's model, held to its endpoint's outages (scheduling's model-outages.ts), per tenant: before a
 * call, it asks whether the endpoint is known to be down; when it is and another call tries it, this
 * call does not go out and throws `WaitForModel`, as does a call that could not reach the endpoint (after
 * the SDK's own quick retries, and the fallback models'). Its run gives its worker slot back and its job
 * waits, spending no attempt (hold-task.ts); the call that gets the endpoint's answer wakes every job
 * that waited for it.
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
    /** What the last call that could not reach the endpoint was told. */
    readonly lastError: string,
    options?: { cause?: unknown },
  ) {
    super(`waiting for the endpoint of model ${model} to answer again: ${lastError}`, options);
  }
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
  },
): LanguageModel {
  const { outages, wake } = options;
  const call: OutageCall = { ...options.caller, model: model.modelId };
  if (options.waitedBefore) outages.suspect(call);
  return {
    modelId: model.modelId,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const entry = await outages.enter(call);
      if (entry.kind === 'wait') throw new WaitForModel(call.model, entry, entry.lastError);
      let response: ModelResponse;
      try {
        response = await model.generate(request);
      } catch (error) {
        const stopped = request.signal?.aborted || (error instanceof LlmError && error.code === 'aborted');
        if (error instanceof LlmError && error.unreachable && !stopped) {
          const wait = await outages.failed(call, error.message);
          throw new WaitForModel(call.model, wait, error.message, { cause: error });
        }
        if (entry.kind === 'probe') {
          // A refusal, a 429, a broken body: the endpoint answered. Cancelled, or past its deadline: no word
          // from it, and the next try is another job's.
          const answered = error instanceof LlmError && !stopped && error.code !== 'deadline_exceeded';
          const waiter = answered ? await outages.recovered(call) : await outages.left(call);
          await wake(Array.isArray(waiter) ? waiter : waiter ? [waiter] : []);
        }
        throw error;
      }
      if (entry.kind === 'probe') await wake(await outages.recovered(call));
      return response;
    },
  };
}

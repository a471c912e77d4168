/**
 * One model answer runs at most so many tool calls; the rest are answered "not run", with what to do.
 * `max_steps` bounds the model calls, not the calls in one answer: without this, one answer (a model
 * looping, or a prompt injected by a page it fetched) could hold a worker's slot for thousands of runs.
 */
import type { PlannedCall } from './tool-protocol.js';

export const DEFAULT_MAX_TOOL_CALLS_PER_STEP = 32;

export function capToolCalls(calls: readonly PlannedCall[], limit: number): readonly PlannedCall[] {
  if (calls.length <= limit) return calls;
  return calls.map((call, index) =>
    index < limit
      ? call
      : {
          ...call,
          notRun: `not run: one answer runs at most ${limit} tool calls, and this was call ${index + 1} of ${calls.length}. Call it again in your next answer if it is still needed.`,
        },
  );
}

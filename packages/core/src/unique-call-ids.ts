/**
 * A model chooses its calls' ids, and may give two calls of one answer the same id, none, or one no
 * API could take back (300 characters, a newline, a `/`). Before the answer is committed, each of its
 * calls gets an id no other call of it has and that `POST /v1/tasks/:id/approvals` can name
 * (CALL_ID_PATTERN: at most MAX_CALL_ID_LENGTH characters, letters, digits and `_.:-`), so that a
 * result, a held call and a person's decision each name exactly one call. An id the model gave once
 * that fits is kept; the answer is stored with the ids given, so the model (and its provider) reads
 * each result under the id of its own call.
 */
import { CALL_ID_PATTERN } from '@agentq/contract';
import type { ToolCall } from '@agentq/protocol';

/**
 * The calls, each with an id of its own: the first call of a fitting id keeps it; a later one gets
 * `<id>_<n>`, and one with no id, an id that does not fit, or whose `<id>_<n>` would not fit or is
 * taken, gets `call_<step>_<n>` (then `call_<step>_<n>_<k>` until free), n its place in the answer.
 * @example uniqueCallIds({ calls: [{ id: 'a', ... }, { id: 'a', ... }], step: 1 }) // ids 'a', 'a_2'
 */
export function uniqueCallIds(options: { calls: readonly ToolCall[]; step: number }): ToolCall[] {
  const taken = new Set<string>();
  const keeps = options.calls.map((call) => {
    const kept = isCallId(call.id) && !taken.has(call.id);
    if (kept) taken.add(call.id);
    return kept;
  });
  return options.calls.map((call, index) => {
    if (keeps[index]) return call;
    const place = `${options.step}_${index + 1}`;
    const second = `${call.id}_${index + 1}`;
    let id = isCallId(call.id) && isCallId(second) && !taken.has(second) ? second : `call_${place}`;
    // Bounded: at most one try per call of the answer is taken.
    for (let next = 2; taken.has(id); next++) id = `call_${place}_${next}`;
    taken.add(id);
    return { ...call, id };
  });
}

function isCallId(id: unknown): id is string {
  return typeof id === 'string' && CALL_ID_PATTERN.test(id);
}

/**
 * A model chooses its calls' ids, and may give two calls of one answer the same id, or none. Before
 * the answer is committed, each of its calls gets an id no other call of it has, so that a result, a
 * held call and a person's decision each name exactly one call. An id the model gave once is kept; the
 * answer is stored with the ids given, so the model (and its provider) reads each result under the id
 * of its own call.
 */
import type { ToolCall } from '@agentq/protocol';

/**
 * The calls, each with an id of its own: the first call of an id keeps it, a later one (or one with
 * none) gets `<id>_<n>` (`call_<step>_<n>`), n its place in the answer, made longer until free.
 * @example uniqueCallIds({ calls: [{ id: 'a', ... }, { id: 'a', ... }], step: 1 }) // ids 'a', 'a_2'
 */
export function uniqueCallIds(options: { calls: readonly ToolCall[]; step: number }): ToolCall[] {
  const taken = new Set<string>();
  const keeps = options.calls.map((call) => {
    const kept = typeof call.id === 'string' && call.id !== '' && !taken.has(call.id);
    if (kept) taken.add(call.id);
    return kept;
  });
  return options.calls.map((call, index) => {
    if (keeps[index]) return call;
    let id = `${call.id || `call_${options.step}`}_${index + 1}`;
    while (taken.has(id)) id += '_';
    taken.add(id);
    return { ...call, id };
  });
}

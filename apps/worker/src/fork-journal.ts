/**
 * A fork's journal, made by its first run: the source task's memory before its `forkStep`-th model
 * answer, under the fork's own system prompt (its agent may differ), with the fork's prompt in place
 * of the source's (from step 1) or after the kept steps (from a later one).
 */
import type { MemoryEntry } from '@agentq/protocol';
import { TaskMissingError, type TaskRecord, type TaskStore } from '@agentq/store';
import { childrenAnswer } from '@agentq/tasks';

export async function forkJournal(options: {
  store: TaskStore;
  record: TaskRecord;
  systemPrompt: string;
}): Promise<MemoryEntry[]> {
  const { store, record } = options;
  const sourceId = record.forkOf!;
  const [source, entries] = await Promise.all([store.getRecord(sourceId), store.messages(sourceId)]);
  if (!source || entries.length === 0)
    throw new TaskMissingError(
      sourceId,
      `The task this one forks, ${sourceId}, is gone (deleted, or its retention ended): fork a task that is still kept.`,
    );
  let answers = 0;
  const cut = entries.findIndex((entry) => entry.role === 'assistant' && ++answers === record.forkStep);
  const kept = entries
    .slice(0, cut === -1 ? entries.length : cut)
    .map((entry, index): MemoryEntry =>
      index === 0 && entry.role === 'system' ? { role: 'system', content: options.systemPrompt } : entry,
    );
  // A parent stopped while it waited for its children (a retry keeps that step): its call is answered with
  // them as they stand, so those that completed are not run again.
  const pending = source.pending;
  if (
    cut === -1 &&
    pending?.kind === 'children' &&
    !kept.some((entry) => entry.role === 'tool' && entry.toolCallId === pending.callId)
  )
    kept.push(childrenAnswer(pending, await Promise.all(pending.children.map((id) => store.getRecord(id)))));
  if (record.prompt !== source.prompt) {
    const first = kept.findIndex((entry) => entry.role === 'user');
    if (record.forkStep === 1 && first !== -1) kept[first] = { role: 'user', content: record.prompt };
    else kept.push({ role: 'user', content: record.prompt });
  }
  return kept;
}

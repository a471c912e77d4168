/**
 * The prompt of a subtask: its own task, the goal it is part of, and the results of the subtasks it
 * needs (they flow along the plan's edges).
 */
import type { TaskRecord, TaskStore } from '@agentq/store';
import { QUOTED_TEXT_RULE, quoted } from '@agentq/core';
import { capOutput } from '@agentq/tools';

/** Characters of each needed subtask's result a subtask sees (head and tail kept). */
const NEED_RESULT_LIMIT = 8_000;

export async function subtaskPrompt(options: { store: TaskStore; record: TaskRecord }): Promise<string> {
  const { store, record } = options;
  const root = await store.getRecord(record.rootId);
  const parts = [record.prompt];
  if (root?.prompt) parts.push(`This is one step of a larger task: ${root.prompt}`);
  const needs = record.needs ?? [];
  if (needs.length) {
    const results = await Promise.all(needs.map((id) => store.getRecord(id)));
    parts.push(
      `Results of the steps this one builds on. ${QUOTED_TEXT_RULE}`,
      ...results.map(
        (need) =>
          `### Step ${need?.planId ?? '?'} (${need?.agent ?? '?'}): ${need?.prompt ?? ''}\n${quoted(capOutput(need?.result ?? '(no result)', NEED_RESULT_LIMIT))}`,
      ),
    );
  }
  parts.push('The shared memory of the task (memory_get, memory_list) may hold notes from the other steps.');
  return parts.join('\n\n');
}

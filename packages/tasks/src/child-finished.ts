/**
 * What follows the end of a task that has a parent: a plan's subtask moves its plan on (subtasks.ts); a
 * child a `delegate` call started may let its parent go on (child-tasks.ts). Safe to call again.
 */
import type { AgentQueues } from '@agentq/scheduling';
import type { TaskStore } from '@agentq/store';
import { onChildEnded } from './child-tasks.js';
import { onSubtaskFinished } from './subtasks.js';

export async function onChildFinished(options: {
  store: TaskStore;
  queues: AgentQueues;
  taskId: string;
}): Promise<void> {
  const record = await options.store.getRecord(options.taskId);
  if (!record?.parentId) return;
  // Only a delegated child has its depth written.
  if (record.depth !== undefined) await onChildEnded({ ...options, child: record });
  else await onSubtaskFinished(options);
}

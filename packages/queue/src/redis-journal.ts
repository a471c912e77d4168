/**
 * The agent loop's journal backed by the task's Redis keys. Every commit also tells the worker
 * whether it should stop: a cancel was requested (even if the message on the cancel channel was
 * missed), or the task is no longer this run's (it ended, or another worker took it over).
 */
import type { AgentJournal, JournalEntry } from '@agentq/core';
import type { MemoryEntry } from '@agentq/protocol';
import type { TaskStore } from './task-store.js';

export interface RedisJournalOptions {
  store: TaskStore;
  taskId: string;
  agent: string;
  worker: string;
  /** This run's token: commits stop being written once another worker has taken the task over. */
  runToken: string;
  /** Called after each commit that was written. */
  onCommit?: (entry: JournalEntry, result: { cancelRequested: boolean }) => void;
}

export function createRedisJournal(options: RedisJournalOptions): AgentJournal {
  const { store, taskId, agent, worker } = options;
  return {
    load: (): Promise<MemoryEntry[]> => store.messages(taskId),
    async commit(entry: JournalEntry): Promise<void> {
      const result = await store.commit({
        taskId,
        // A commit of a task that ended meanwhile (cancelled) is not written.
        expect: ['running'],
        runToken: options.runToken,
        ...(entry.messages ? { messages: entry.messages } : {}),
        ...(entry.usage ? { usage: entry.usage } : {}),
        ...(entry.steps !== undefined ? { steps: entry.steps } : {}),
        events: (entry.events ?? []).map((event) => ({ ...event, agent, worker })),
      });
      options.onCommit?.(entry, { cancelRequested: result.cancelRequested || !result.applied });
    },
  };
}

/**
 * The agent loop's journal backed by the task's Redis keys. Every commit also tells the worker
 * whether it should stop: a cancel was requested (even if the message on the cancel channel was
 * missed), or a budget or limit is spent. A commit the script refused (another worker took the task
 * over, it ended, it is gone) rejects with the loop's RunLostError, naming which.
 *
 * Writes are few: a `lazy` commit (see core's journal.ts) and the run's `task.started` are held back
 * and go out with the next write, a commit or the run's outcome (a transition takes them through
 * `takeHeld`), so a single-step task with a quick model costs its worker a claim and one commit.
 */
import { RunLostError, type AgentJournal, type JournalEntry, type RunLostReason } from '@agentq/core';
import type { CommitOutcome } from '@agentq/store';
import type { MemoryEntry } from '@agentq/protocol';
import type { SpendingStop, StoredEventInput, TaskStore } from '@agentq/store';
import { joinWrites, type HeldWrite } from './transitions.js';

export interface RedisJournalOptions {
  store: TaskStore;
  taskId: string;
  /** The task's tenant (its commits touch its tenant's counters). */
  tenant: string;
  agent: string;
  worker: string;
  /** This run's token: commits stop being written once another worker has taken the task over. */
  runToken: string;
  /** The task's memory when the run took it (its claim read it): the first `load` needs no read. */
  memory?: MemoryEntry[];
  /** Events to go out with the first write (the run's `task.started`). */
  heldEvents?: StoredEventInput[];
  /** Called after each commit that was written. */
  onCommit?: (entry: JournalEntry, result: { cancelRequested: boolean; stop: SpendingStop | undefined }) => void;
}

export interface RedisJournal extends AgentJournal {
  /** What is held back, for the run's next write to take (nothing is held after). */
  takeHeld(): HeldWrite | undefined;
  /** Writes what is held back, if anything, while the run still holds its task. */
  flush(): Promise<void>;
}

/** The commit script's refusals, as the loop's journal names them. */
const LOST_BECAUSE: Record<Exclude<CommitOutcome, 'applied'>, RunLostReason> = {
  stale_token: 'taken_over',
  wrong_status: 'moved_on',
  missing: 'gone',
};

export function createRedisJournal(options: RedisJournalOptions): RedisJournal {
  const { store, taskId, agent, worker } = options;
  let memory = options.memory;
  let held: HeldWrite | undefined = options.heldEvents?.length
    ? { messages: [], events: [...options.heldEvents] }
    : undefined;
  const asWrite = (entry: JournalEntry): HeldWrite => {
    // A held event keeps the time it happened, not the time it is written.
    const at = entry.lazy ? new Date().toISOString() : undefined;
    return {
      messages: entry.messages ?? [],
      events: (entry.events ?? []).map((event) => ({ ...event, agent, worker, ...(at ? { at } : {}) })),
      ...(entry.usage ? { usage: entry.usage } : {}),
      ...(entry.steps !== undefined ? { steps: entry.steps } : {}),
    };
  };
  // A lazy commit with `writeWithinMs` that nothing took in time is written by itself.
  let timer: NodeJS.Timeout | undefined;
  const takeHeld = (): HeldWrite | undefined => {
    const taken = held;
    held = undefined;
    clearTimeout(timer);
    timer = undefined;
    return taken;
  };
  const write = async (entry: JournalEntry, out: HeldWrite): Promise<void> => {
    const result = await store.commit({
      taskId,
      tenant: options.tenant,
      // A commit of a task that ended meanwhile (cancelled) is not written.
      expect: ['running'],
      runToken: options.runToken,
      ...out,
      // The record keeps them for a run that resumes the step (task-record.ts `startedCalls`).
      ...(entry.startedCalls ? { fields: { startedCalls: JSON.stringify(entry.startedCalls) } } : {}),
    });
    if (result.outcome !== 'applied') throw new RunLostError(taskId, LOST_BECAUSE[result.outcome], result.status);
    options.onCommit?.(entry, { cancelRequested: result.cancelRequested, stop: result.stop });
  };
  const flush = async (): Promise<void> => {
    const taken = takeHeld();
    if (taken) await write({}, taken);
  };
  return {
    async load(): Promise<MemoryEntry[]> {
      const loaded = memory ?? (await store.messages(taskId));
      memory = undefined;
      return loaded;
    },
    commit(entry: JournalEntry): Promise<void> {
      // A call's start is written before it runs, never held.
      if (entry.lazy && !entry.startedCalls) {
        held = joinWrites(held, asWrite(entry));
        if (entry.writeWithinMs !== undefined && !timer) {
          // A lazy write is what the run could make again (core's journal.ts): one that fails (the task taken
          // over, Redis away) costs nothing the run needs, and its next write fails with the reason.
          timer = setTimeout(() => void flush().catch(() => undefined), entry.writeWithinMs);
        }
        return Promise.resolve();
      }
      // Taken now, not after an await: writes go out in the order they were made.
      return write(entry, joinWrites(takeHeld(), asWrite(entry)));
    },
    takeHeld,
    flush,
  };
}

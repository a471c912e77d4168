/**
 * Where the loop keeps what happened: the task's messages and its events. Each commit is written
 * whole (messages, events and usage together) before the loop goes on, so a job resumed on another
 * worker starts from its last commit and never repeats an LLM call that was already answered. A
 * `lazy` commit is the exception: what could be made again if it were lost (a task's first messages,
 * a final answer just before the run's outcome) or only tells (that a model or tool call began), which a
 * journal may write with its next write; `writeWithinMs` bounds how long it may wait for one. A commit
 * that records an approved call's start (`startedCalls`) is never lazy: it is what keeps that call from
 * running twice.
 */
import type { MemoryEntry, TokenUsage } from '@agentq/protocol';
import { AgentqError, type EventInput } from '@agentq/contract';

/**
 * How long an event that only tells that a call began (`llm.request`, `tool.call`) may wait to go out
 * with the call's result: below it, no one watching could tell, and a quick call costs one write, not two.
 */
export const ANNOUNCE_WITHIN_MS = 300;

export interface JournalEntry {
  /** Appended to memory: messages, and compactions. */
  messages?: MemoryEntry[];
  events?: EventInput[];
  usage?: TokenUsage;
  /** The number of completed steps after this commit. */
  steps?: number;
  /** May be written with the journal's next write instead of now (see above). */
  lazy?: boolean;
  /** A lazy commit is written by itself if no other write took it within this long. Default: no limit. */
  writeWithinMs?: number;
  /**
   * The approved calls of a step that began, this commit's one included: written before that call runs,
   * and given back to a run that resumes the step (the task's record keeps them), which runs none of
   * them again. Replaces what was recorded before.
   */
  startedCalls?: StartedCalls;
}

/** The approved calls of step `step` that began, by id. */
export interface StartedCalls {
  step: number;
  ids: readonly string[];
}

export interface AgentJournal {
  /** Everything committed to memory so far, oldest first. */
  load(): Promise<MemoryEntry[]>;
  /** Rejects with RunLostError once the run no longer holds its task: nothing more of it is written. */
  commit(entry: JournalEntry): Promise<void>;
}

/**
 * Why a journal refused a run's write: another run holds the task now (this one stalled or was cut
 * off and came back), the task moved on without it (ended, cancelled, waiting), or it is gone.
 */
export type RunLostReason = 'taken_over' | 'moved_on' | 'gone';

/**
 * The run lost its task: the loop stops as such, with no outcome of its own to record (the task is
 * another run's, or has ended). Not a cancel: nobody asked this run to stop, and nothing it would
 * write as its end can land.
 */
export class RunLostError extends AgentqError {
  readonly code = 'run_lost';
  readonly retryable = false;
  constructor(
    readonly taskId: string,
    readonly reason: RunLostReason,
    /** The task's status as the refusal found it (undefined when it is gone). */
    readonly status?: string,
  ) {
    super(
      reason === 'taken_over'
        ? `Task ${taskId} is held by another run now: this run stops without writing more`
        : reason === 'moved_on'
          ? `Task ${taskId} is ${status} now, not this run's to write`
          : `Task ${taskId} is gone`,
    );
  }
}

/** A journal in memory, for tests and one-off runs. */
export function createMemoryJournal(
  initial: MemoryEntry[] = [],
): AgentJournal & { messages: MemoryEntry[]; events: EventInput[]; steps: number; startedCalls?: StartedCalls } {
  const journal = {
    messages: [...initial],
    events: [] as EventInput[],
    steps: 0,
    startedCalls: undefined as StartedCalls | undefined,
    async load() {
      return [...journal.messages];
    },
    async commit(entry: JournalEntry) {
      journal.messages.push(...(entry.messages ?? []));
      journal.events.push(...(entry.events ?? []));
      if (entry.steps !== undefined) journal.steps = entry.steps;
      if (entry.startedCalls) journal.startedCalls = entry.startedCalls;
    },
  };
  return journal;
}

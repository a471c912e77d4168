/**
 * Where the loop keeps what happened: the task's messages and its events. Each commit is written
 * whole (messages, events and usage together) before the loop goes on, so a job resumed on another
 * worker starts from its last commit and never repeats an LLM call that was already answered. A
 * `lazy` commit is the exception: what could be made again if it were lost (a task's first messages,
 * a final answer just before the run's outcome) or only tells (that a model or tool call began), which a
 * journal may write with its next write; `writeWithinMs` bounds how long it may wait for one.
 */
import type { MemoryEntry, TokenUsage } from '@agentq/protocol';
import type { EventInput } from '@agentq/contract';

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
}

export interface AgentJournal {
  /** Everything committed to memory so far, oldest first. */
  load(): Promise<MemoryEntry[]>;
  commit(entry: JournalEntry): Promise<void>;
}

/** A journal in memory, for tests and one-off runs. */
export function createMemoryJournal(
  initial: MemoryEntry[] = [],
): AgentJournal & { messages: MemoryEntry[]; events: EventInput[]; steps: number } {
  const journal = {
    messages: [...initial],
    events: [] as EventInput[],
    steps: 0,
    async load() {
      return [...journal.messages];
    },
    async commit(entry: JournalEntry) {
      journal.messages.push(...(entry.messages ?? []));
      journal.events.push(...(entry.events ?? []));
      if (entry.steps !== undefined) journal.steps = entry.steps;
    },
  };
  return journal;
}

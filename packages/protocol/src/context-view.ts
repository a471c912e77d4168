/**
 * The conversation as the model sees it: stored messages with compactions applied. Each item keeps
 * the span of stored positions it stands for, so a later compaction can cover earlier ones whole.
 */
import type { AssistantMessage, MemoryEntry, Message } from './messages.js';

export const SUMMARY_MARKER = "[Summary of earlier steps, written by agentq's summariser; not a message from the user]";

export interface ContextItem {
  message: Message;
  /** Stored positions [from, to) this item stands for. */
  from: number;
  to: number;
}

export function buildContextView(entries: readonly MemoryEntry[]): ContextItem[] {
  // A later compaction that covers an earlier one replaces it; ranges never cross otherwise.
  const byStart = new Map<number, { to: number; summary: string }>();
  for (const entry of entries) {
    if (entry.role !== 'compaction') continue;
    for (const [start, range] of byStart) if (start >= entry.from && range.to <= entry.to) byStart.delete(start);
    byStart.set(entry.from, { to: entry.to, summary: entry.summary });
  }
  const items: ContextItem[] = [];
  for (let index = 0; index < entries.length;) {
    const compaction = byStart.get(index);
    if (compaction) {
      items.push({ message: summaryMessage(compaction.summary), from: index, to: compaction.to });
      index = compaction.to;
      continue;
    }
    const entry = entries[index]!;
    if (entry.role !== 'compaction') items.push({ message: entry, from: index, to: index + 1 });
    index++;
  }
  return items;
}

function summaryMessage(summary: string): AssistantMessage {
  return { role: 'assistant', content: `${SUMMARY_MARKER}\n${summary}` };
}

/** A message the user wrote (the goal, an answer), as opposed to tool feedback or a summary. */
export function isUserSaid(message: Message): boolean {
  return message.role === 'user' && !message._feedback;
}

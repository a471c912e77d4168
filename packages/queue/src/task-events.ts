/**
 * Reading a task's event stream back (the envelope is the contract's `TaskEvent`). A write's events
 * are one stream entry whose id is its last event's `seq` (see commit-script.ts), so a read from
 * `afterSeq` may start inside an entry: what it already saw is dropped.
 */
import type { Redis } from 'ioredis';
import type { TaskEvent } from '@agentq/contract';

/** One stored event: its JSON text as written, and what a reader needs of it without parsing it again. */
export interface StoredEvent {
  event: TaskEvent;
  text: string;
}

/** Events with `seq` greater than `afterSeq`, oldest first. */
export async function readEvents(options: { redis: Redis; key: string; afterSeq?: number }): Promise<StoredEvent[]> {
  const afterSeq = options.afterSeq ?? 0;
  const entries = await options.redis.xrange(options.key, afterSeq ? `(${afterSeq}-0` : '-', '+');
  // An entry's one field holds its events, one per line (`events`; older versions wrote one, as `event`).
  return entries.flatMap(([, fields]) => parseEventLines(fields[1] ?? '').filter((stored) => stored.event.seq > afterSeq));
}

/** Events written one JSON per line (a stream entry, or a message on a task's channel). */
export function parseEventLines(text: string): StoredEvent[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ event: JSON.parse(line) as TaskEvent, text: line }));
}

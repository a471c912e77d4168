/**
 * Reading a task's events back (the envelope is the contract's `TaskEvent`). A write's events are one
 * stream entry whose id is its last event's `seq` (see commit-script.ts), so a read from `afterSeq`
 * may start inside an entry: what it already saw is dropped. Once a task ended, its stream's lines are
 * compacted into one deflated string (compact-events.ts); events written after that (a retried task)
 * start a new stream. A read takes both in one MULTI, so a compaction never falls between them.
 */
import { inflateRawSync } from 'node:zlib';
import type { Redis } from 'ioredis';
import type { TaskEvent } from '@agentq/contract';

/** One stored event: its JSON text as written, and what a reader needs of it without parsing it again. */
export interface StoredEvent {
  event: TaskEvent;
  text: string;
}

export interface EventKeys {
  /** The stream. */
  key: string;
  /** The compacted events. */
  packedKey: string;
}

/** Events with `seq` greater than `afterSeq`, oldest first. */
export async function readEvents(options: { redis: Redis } & EventKeys & { afterSeq?: number }): Promise<StoredEvent[]> {
  const afterSeq = options.afterSeq ?? 0;
  const [[, packed], [, entries]] = (await options.redis
    .multi()
    .getBuffer(options.packedKey)
    .xrange(options.key, afterSeq ? `(${afterSeq}-0` : '-', '+')
    .exec()) as [[unknown, Buffer | null], [unknown, Array<[string, string[]]>]];
  const older = packed ? parseEventLines(inflateRawSync(packed).toString('utf8')) : [];
  // An entry's one field holds its events, one per line.
  const newer = entries.flatMap(([, fields]) => parseEventLines(fields[1] ?? ''));
  return [...older, ...newer].filter((stored) => stored.event.seq > afterSeq);
}

/** Events written one JSON per line (a stream entry, or a message on a task's channel). */
export function parseEventLines(text: string): StoredEvent[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ event: JSON.parse(line) as TaskEvent, text: line }));
}

/**
 * Reading a task's events back (the envelope is the contract's `TaskEvent`). A task's events are a
 * list, one JSON event per element (see commit-script.ts): a read from `afterSeq` starts at the
 * element after it. Once a task ended, its events are compacted into one deflated string
 * (compact-events.ts); events written after that (a retried task) start a new list. One script
 * reads both, so a compaction never falls between them.
 */
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Redis } from 'ioredis';
import type { TaskEvent } from '@agentq/contract';
import { luaScript } from './lua-script.js';

/**
 * A task's packed events are a raw deflate stream left open (no final block: ended with a sync flush), so
 * that more parts can follow it (commit.lua); one written before that, closed, reads the same.
 */
export const OPEN_STREAM = { finishFlush: constants.Z_SYNC_FLUSH };

/** Lines deflated as a packed string's part (open: more can follow it). */
export function deflateOpen(text: string): Buffer {
  return deflateRawSync(text, OPEN_STREAM);
}

/**
 * Text as deflate's stored blocks (RFC 1951, 3.2.4), none final: the bytes as they are behind a 5-byte
 * header per 65,535, for a packed string's part that costs no deflate (a task's first event, made
 * with its create) and that more can follow.
 */
export function storedOpen(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let from = 0; from < bytes.length; from += 0xffff) {
    const chunk = bytes.subarray(from, from + 0xffff);
    const header = Buffer.alloc(5);
    header.writeUInt16LE(chunk.length, 1);
    header.writeUInt16LE(0xffff - chunk.length, 3);
    parts.push(header, chunk);
  }
  return Buffer.concat(parts);
}

/** A packed string's text. */
export function inflatePacked(packed: Buffer): string {
  return inflateRawSync(packed, OPEN_STREAM).toString('utf8');
}

/** One stored event: its JSON text as written, and what a reader needs of it without parsing it again. */
export interface StoredEvent {
  event: TaskEvent;
  text: string;
}

export interface EventKeys {
  /** The list. */
  key: string;
  /** The compacted events. */
  packedKey: string;
}

const READ = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'read-events',
  keys: ['packedKey', 'listKey'],
  args: ['afterSeq'],
});

/** Events with `seq` greater than `afterSeq`, oldest first. */
export async function readEvents(
  options: { redis: Redis } & EventKeys & { afterSeq?: number },
): Promise<StoredEvent[]> {
  const afterSeq = options.afterSeq ?? 0;
  const [packed, list] = (await READ.runBuffer(options.redis, {
    keys: { packedKey: options.packedKey, listKey: options.key },
    args: { afterSeq },
  })) as [Buffer, Buffer[]];
  const older = packed.length ? parseEventLines(inflatePacked(packed)) : [];
  const newer = list.map((element) => {
    const text = element.toString('utf8');
    return { event: JSON.parse(text) as TaskEvent, text };
  });
  return [...older, ...newer].filter((stored) => stored.event.seq > afterSeq);
}

/** Events written one JSON per line (a message on a task's channel, compacted events). */
export function parseEventLines(text: string): StoredEvent[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ event: JSON.parse(line) as TaskEvent, text: line }));
}

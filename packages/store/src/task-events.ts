/**
 * Reading a task's events back (the envelope is the contract's `TaskEvent`). A task's events are a
 * list, one JSON event per element (see commit-script.ts): a read from `afterSeq` starts at the
 * element after it. Once a task ended, its events are compacted into one deflated string
 * (compact-events.ts); events written after that (a retried task) start a new list, and an earlier
 * version kept them in a stream (one entry per write, its id the write's last `seq`), still read
 * until it is compacted. One script reads all three, so a compaction never falls between them.
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
  /** The list. */
  key: string;
  /** An earlier version's stream. */
  streamKey: string;
  /** The compacted events. */
  packedKey: string;
}

/**
 * KEYS: [packed, stream, list]; ARGV: [after seq]. The list's first element tells where it starts
 * (a list begun after a compaction does not start at 1): the read skips what was seen.
 */
const READ_SCRIPT = `
local after = tonumber(ARGV[1])
local first = redis.call('LINDEX', KEYS[3], 0)
local start = 0
if first then start = math.max(0, after - tonumber(string.match(first, '"seq":(%d+)')) + 1) end
return {
  redis.call('GET', KEYS[1]) or '',
  redis.call('XRANGE', KEYS[2], after > 0 and '(' .. ARGV[1] .. '-0' or '-', '+'),
  redis.call('LRANGE', KEYS[3], start, -1),
}
`;

interface ReadCommands {
  agentqReadTaskEventsBuffer(
    packed: string,
    stream: string,
    list: string,
    afterSeq: number,
  ): Promise<[Buffer, Array<[Buffer, Buffer[]]>, Buffer[]]>;
}

/** Events with `seq` greater than `afterSeq`, oldest first. */
export async function readEvents(
  options: { redis: Redis } & EventKeys & { afterSeq?: number },
): Promise<StoredEvent[]> {
  const afterSeq = options.afterSeq ?? 0;
  const redis = options.redis as Redis & Partial<ReadCommands>;
  if (!redis.agentqReadTaskEventsBuffer)
    redis.defineCommand('agentqReadTaskEvents', { numberOfKeys: 3, lua: READ_SCRIPT });
  const [packed, entries, list] = await (redis as unknown as ReadCommands).agentqReadTaskEventsBuffer(
    options.packedKey,
    options.streamKey,
    options.key,
    afterSeq,
  );
  const older = packed.length ? parseEventLines(inflateRawSync(packed).toString('utf8')) : [];
  // An earlier version's stream entry holds a write's events, one per line.
  const streamed = entries.flatMap(([, fields]) => parseEventLines(fields[1]?.toString('utf8') ?? ''));
  const newer = list.map((element) => {
    const text = element.toString('utf8');
    return { event: JSON.parse(text) as TaskEvent, text };
  });
  const events = [...older, ...streamed, ...newer].filter((stored) => stored.event.seq > afterSeq);
  // A process of the earlier version still appending to its stream beside this version's list: in order of seq.
  return streamed.length && newer.length ? events.sort((a, b) => a.event.seq - b.event.seq) : events;
}

/** Events written one JSON per line (a message on a task's channel, compacted events). */
export function parseEventLines(text: string): StoredEvent[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ event: JSON.parse(line) as TaskEvent, text: line }));
}

/**
 * An ended task's event stream, compacted: a stream costs Redis about twice its text (entries, radix
 * tree, listpack slack), so once a task ended its lines are deflated into one string key and the
 * stream is removed. The replay stays complete (task-events.ts reads both). It runs in the
 * background of every worker process, off the tasks' own path, on batches shared through claim-due.ts.
 *
 * A batch is three calls whatever its size: claim ids; read every one's packed string and stream in
 * one script; deflate them and write them all with one script,
 * which replaces a stream only if its last entry is still the one read: an event added meanwhile (a
 * retried task) keeps the task for a later batch.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Redis } from 'ioredis';
import { claimDue } from './claim-due.js';
import type { Keys } from './keys.js';

/**
 * Deflated on the event loop, a slice at a time: a task's few KB take ~30 µs there, against ~300 µs
 * of CPU through zlib's asynchronous API (a stream and a thread-pool trip per task).
 */
const DEFLATE_SLICE = 50;

/** KEYS = for each task [packed, stream]; returns for each its packed string ('' for none) and its entries. */
const READ_SCRIPT = `
local out = {}
for index = 1, #KEYS, 2 do
  out[#out + 1] = redis.call('GET', KEYS[index]) or ''
  out[#out + 1] = redis.call('XRANGE', KEYS[index + 1], '-', '+')
end
return out
`;

/**
 * KEYS = [to-compact, then for each task: stream, packed]; ARGV = for each task [id, last entry id
 * read, deflated lines]. Returns how many were replaced. A task with no stream left (removed, or
 * compacted already) leaves the set; one whose stream grew stays, for a later batch.
 */
const REPLACE_SCRIPT = `
local replaced = 0
local done = {}
for index = 1, #ARGV, 3 do
  local stream, packed = KEYS[2 + (index - 1) / 3 * 2], KEYS[3 + (index - 1) / 3 * 2]
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  if last and last[1] == ARGV[index + 1] then
    redis.call('SET', packed, ARGV[index + 2])
    redis.call('DEL', stream)
    replaced = replaced + 1
  end
  if not last or last[1] == ARGV[index + 1] then done[#done + 1] = ARGV[index] end
end
for from = 1, #done, 1000 do redis.call('ZREM', KEYS[1], unpack(done, from, math.min(from + 999, #done))) end
return replaced
`;

/** How long a claimed batch is a worker's before another may take it again. */
const LEASE_MS = 60_000;

type Entry = [Buffer, Buffer[]];

interface CompactCommands {
  agentqReadEventsBuffer(numberOfKeys: number, ...keys: string[]): Promise<Array<Buffer | Entry[]>>;
  agentqReplaceEvents(numberOfKeys: number, ...args: Array<string | Buffer>): Promise<number>;
}

/** Compacts up to `batchSize` ended tasks' events; returns how many were compacted. */
export async function compactEvents(options: { redis: Redis; keys: Keys; batchSize?: number }): Promise<number> {
  const { redis, keys } = options;
  if (!(redis as unknown as Partial<CompactCommands>).agentqReplaceEvents) {
    redis.defineCommand('agentqReadEvents', { lua: READ_SCRIPT });
    redis.defineCommand('agentqReplaceEvents', { lua: REPLACE_SCRIPT });
  }
  const commands = redis as unknown as CompactCommands;
  const ids = await claimDue(redis, keys.toCompact, { now: Date.now(), count: options.batchSize ?? 200, leaseMs: LEASE_MS });
  if (ids.length === 0) return 0;
  const read = await commands.agentqReadEventsBuffer(2 * ids.length, ...ids.flatMap((id) => [keys.packedEvents(id), keys.events(id)]));
  const replacements: Array<{ id: string; lastId: string; blob: Buffer }> = [];
  for (const [index, id] of ids.entries()) {
    if (index > 0 && index % DEFLATE_SLICE === 0) await nextTurn();
    const packed = read[2 * index] as Buffer;
    const entries = read[2 * index + 1] as Entry[];
    const lines = [...(packed.length ? [inflateRawSync(packed).toString('utf8')] : []), ...entries.map(([, fields]) => fields[1]?.toString('utf8') ?? '')];
    const lastId = entries.at(-1)?.[0].toString() ?? '';
    replacements.push({ id, lastId, blob: entries.length ? deflateRawSync(lines.join('\n')) : Buffer.alloc(0) });
  }
  return commands.agentqReplaceEvents(
    1 + 2 * ids.length,
    keys.toCompact,
    ...ids.flatMap((id) => [keys.events(id), keys.packedEvents(id)]),
    ...replacements.flatMap(({ id, lastId, blob }) => [id, lastId, blob]),
  );
}

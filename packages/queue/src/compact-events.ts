/**
 * An ended task's events, compacted: once a task ended, its events (its list, and an earlier version's
 * stream) are deflated into one string key, a fraction of their size, and the list is removed. The
 * replay stays complete (task-events.ts reads all of them). It runs in the background of every worker
 * process, off the tasks' own path, on batches shared through claim-due.ts.
 *
 * A batch is three calls whatever its size: claim ids; read every one's packed string, stream and list
 * in one script; deflate them and write them all with one script, which replaces a list only if its
 * length is still the one read: an event added meanwhile (a retried task) keeps the task for a later
 * batch.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Redis } from 'ioredis';
import { claimDue } from './claim-due.js';
import type { Keys } from './keys.js';
import { CALL_MANY } from './lua-call-many.js';

/**
 * Deflated on the event loop, a slice at a time: a task's few KB take ~30 µs there, against ~300 µs
 * of CPU through zlib's asynchronous API (a stream and a thread-pool trip per task).
 */
const DEFLATE_SLICE = 50;

/**
 * KEYS = for each task [packed, stream, list]; returns for each its packed string ('' for none), an
 * earlier version's stream entries, and its list. The packed strings are one MGET and the streams one
 * EXISTS for the whole batch (a stream is read only when one is left): a task costs one read, its list.
 */
const READ_SCRIPT = `
local packedKeys, streamKeys = {}, {}
for index = 1, #KEYS, 3 do
  packedKeys[#packedKeys + 1] = KEYS[index]
  streamKeys[#streamKeys + 1] = KEYS[index + 1]
end
local packed = redis.call('MGET', unpack(packedKeys))
local streamed = redis.call('EXISTS', unpack(streamKeys)) > 0
local out = {}
for index = 1, #KEYS, 3 do
  out[#out + 1] = packed[(index + 2) / 3] or ''
  out[#out + 1] = streamed and redis.call('XRANGE', KEYS[index + 1], '-', '+') or {}
  out[#out + 1] = redis.call('LRANGE', KEYS[index + 2], 0, -1)
end
return out
`;

/**
 * KEYS = [to-compact, then for each task: list, stream, packed]; ARGV = for each task [id, the list's
 * length read, the stream's length read, '1' when there was anything to pack, deflated lines]. Returns
 * how many were replaced. A task whose list or stream grew meanwhile (a retried task) stays in the set,
 * for a later batch; the others leave it. A stream none was read of is left alone.
 */
const REPLACE_SCRIPT = `${CALL_MANY}
local replaced = 0
local done = {}
for index = 1, #ARGV, 5 do
  local base = 2 + (index - 1) / 5 * 3
  local streamed = tonumber(ARGV[index + 2])
  if redis.call('LLEN', KEYS[base]) == tonumber(ARGV[index + 1]) and (streamed == 0 or redis.call('XLEN', KEYS[base + 1]) == streamed) then
    if ARGV[index + 3] == '1' then
      redis.call('SET', KEYS[base + 2], ARGV[index + 4])
      redis.call('DEL', KEYS[base])
      if streamed > 0 then redis.call('DEL', KEYS[base + 1]) end
      replaced = replaced + 1
    end
    done[#done + 1] = ARGV[index]
  end
end
callMany('ZREM', KEYS[1], done)
return replaced
`;

/** How long a claimed batch is a worker's before another may take it again. */
const LEASE_MS = 60_000;

type Entry = [Buffer, Buffer[]];

interface CompactCommands {
  agentqReadEventsBuffer(numberOfKeys: number, ...keys: string[]): Promise<Array<Buffer | Entry[] | Buffer[]>>;
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
  const read = await commands.agentqReadEventsBuffer(3 * ids.length, ...ids.flatMap((id) => [keys.packedEvents(id), keys.streamedEvents(id), keys.events(id)]));
  const replacements: Array<{ id: string; length: number; streamed: number; blob: Buffer | undefined }> = [];
  for (const [index, id] of ids.entries()) {
    if (index > 0 && index % DEFLATE_SLICE === 0) await nextTurn();
    const packed = read[3 * index] as Buffer;
    const entries = read[3 * index + 1] as Entry[];
    const list = read[3 * index + 2] as Buffer[];
    const streamed = entries.flatMap(([, fields]) => (fields[1]?.toString('utf8') ?? '').split('\n'));
    const listed = list.map((element) => element.toString('utf8'));
    const lines = [
      ...(packed.length ? [inflateRawSync(packed).toString('utf8')] : []),
      // An earlier version's stream and this version's list, both written to (versions side by side): in order of seq.
      ...(streamed.length && listed.length ? [...streamed, ...listed].sort((a, b) => seqOf(a) - seqOf(b)) : [...streamed, ...listed]),
    ];
    // Nothing since the last compaction (or no task left): nothing to write.
    const blob = list.length || entries.length ? deflateRawSync(lines.join('\n')) : undefined;
    replacements.push({ id, length: list.length, streamed: entries.length, blob });
  }
  return commands.agentqReplaceEvents(
    1 + 3 * ids.length,
    keys.toCompact,
    ...ids.flatMap((id) => [keys.events(id), keys.streamedEvents(id), keys.packedEvents(id)]),
    ...replacements.flatMap(({ id, length, streamed, blob }) => [id, String(length), String(streamed), blob ? '1' : '0', blob ?? '']),
  );
}

/** An event line's `seq`: the envelope's, which comes before its data. */
function seqOf(line: string): number {
  return Number(/"seq":(\d+)/.exec(line)?.[1] ?? 0);
}

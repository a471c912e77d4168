/**
 * An ended task's event stream, compacted: a stream costs Redis about twice its text (entries, radix
 * tree, listpack slack), so once a task ended its lines are deflated into one string key and the
 * stream is removed. The replay stays complete (task-events.ts reads both). It runs in the
 * background of every worker process, off the tasks' own path, on batches shared through claim-due.ts.
 *
 * A batch: claim ids, read each one's packed string and stream in one pipeline, deflate (on libuv's
 * threads, not the event loop), then write each with a script that replaces the stream only if its
 * last entry is still the one read: an event added meanwhile (a retried task) keeps the task for a
 * later batch.
 */
import { promisify } from 'node:util';
import { deflateRaw, inflateRawSync } from 'node:zlib';
import type { Redis } from 'ioredis';
import { claimDue } from './claim-due.js';
import type { Keys } from './keys.js';

const deflate = promisify(deflateRaw);

/** KEYS = [stream, packed, to-compact]; ARGV = [last entry id read, deflated lines, task id]. */
const REPLACE_SCRIPT = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last and last[1] == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[3], ARGV[3])
  return 1
end
-- Nothing to compact (the task was removed, or compacted already): it leaves the set.
if not last then redis.call('ZREM', KEYS[3], ARGV[3]) end
return 0
`;

/** How long a claimed batch is a worker's before another may take it again. */
const LEASE_MS = 60_000;

interface ReplaceCommand {
  agentqReplaceEvents(stream: string, packed: string, toCompact: string, lastId: string, lines: Buffer, taskId: string): Promise<number>;
}

/** Compacts up to `batchSize` ended tasks' events; returns how many were compacted. */
export async function compactEvents(options: { redis: Redis; keys: Keys; batchSize?: number }): Promise<number> {
  const { redis, keys } = options;
  if (!(redis as unknown as Partial<ReplaceCommand>).agentqReplaceEvents) redis.defineCommand('agentqReplaceEvents', { numberOfKeys: 3, lua: REPLACE_SCRIPT });
  const ids = await claimDue(redis, keys.toCompact, { now: Date.now(), count: options.batchSize ?? 200, leaseMs: LEASE_MS });
  if (ids.length === 0) return 0;
  const read = redis.pipeline();
  for (const id of ids) read.getBuffer(keys.packedEvents(id)).xrange(keys.events(id), '-', '+');
  const replies = (await read.exec()) ?? [];
  const write = redis.pipeline() as unknown as ReplaceCommand & { exec(): Promise<Array<[Error | null, unknown]> | null> };
  await Promise.all(
    ids.map(async (id, index) => {
      const packed = replies[2 * index]?.[1] as Buffer | null;
      const entries = (replies[2 * index + 1]?.[1] ?? []) as Array<[string, string[]]>;
      const lastId = entries.at(-1)?.[0] ?? '';
      const lines = [...(packed ? [inflateRawSync(packed).toString('utf8')] : []), ...entries.map(([, fields]) => fields[1] ?? '')].join('\n');
      void write.agentqReplaceEvents(keys.events(id), keys.packedEvents(id), keys.toCompact, lastId, entries.length ? await deflate(lines) : Buffer.alloc(0), id);
    }),
  );
  const results = (await write.exec()) ?? [];
  return results.filter(([error, compacted]) => !error && compacted === 1).length;
}

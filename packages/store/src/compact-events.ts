/**
 * An ended task's events, compacted: once a task ended, its events (its list) are deflated into one
 * string key, a fraction of their size, and the list is removed. The replay stays complete
 * (task-events.ts reads both). It runs in the background of every worker
 * process, off the tasks' own path, on batches shared through claim-due.ts.
 *
 * A batch is three round trips whatever its size: claim ids; read every one's packed string and list
 * (one pipeline); deflate them and write them all with one script, which replaces a list only if its
 * length is still the one read: an event added meanwhile (a retried task) keeps the task for a later
 * batch.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { claimDue } from './claim-due.js';
import type { CellKeys, Keys } from './keys.js';
import { luaScript } from './lua-script.js';
import { deflateOpen, inflatePacked } from './task-events.js';
import { execPipeline } from './pipeline-replies.js';

/**
 * Deflated on the event loop, a slice at a time: a task's few KB take ~30 µs there, against ~300 µs
 * of CPU through zlib's asynchronous API (a stream and a thread-pool trip per task).
 */
const DEFLATE_SLICE = 50;

const REPLACE = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'replace-events',
  keys: ['toCompactKey'],
  args: [],
});

/** How long a claimed batch is a worker's before another may take it again. */
const LEASE_MS = 60_000;

/** Compacts up to `batchSize` ended tasks' events in each cell; returns how many were compacted. */
export async function compactEvents(options: { redis: Redis; keys: Keys; batchSize?: number }): Promise<number> {
  let compacted = 0;
  for (const cell of options.keys.cells) compacted += await compactCell(options.redis, cell, options.batchSize ?? 200);
  return compacted;
}

async function compactCell(redis: Redis, keys: CellKeys, batchSize: number): Promise<number> {
  const ids = await claimDue(redis, keys.toCompact, {
    now: Date.now(),
    count: batchSize,
    leaseMs: LEASE_MS,
  });
  if (ids.length === 0) return 0;
  const read = await readBatch(redis, keys, ids);
  const replacements: Array<{ id: string; length: number; blob: Buffer | undefined }> = [];
  for (const [index, id] of ids.entries()) {
    if (index > 0 && index % DEFLATE_SLICE === 0) await nextTurn();
    const { packed, list } = read[index]!;
    const lines = [
      // (each part of a packed string ends with its lines' newline; one written before may not)
      ...(packed.length ? [inflatePacked(packed).replace(/\n$/, '')] : []),
      ...list.map((element) => element.toString('utf8')),
    ];
    // Nothing since the last compaction (or no task left): nothing to write.
    const blob = list.length ? deflateOpen(`${lines.join('\n')}\n`) : undefined;
    replacements.push({ id, length: list.length, blob });
  }
  return (await REPLACE.run(redis, {
    keys: { toCompactKey: keys.toCompact },
    args: {},
    restKeys: ids.flatMap((id) => [keys.events(id), keys.packedEvents(id)]),
    restArgs: replacements.flatMap(({ id, length, blob }) => [id, String(length), blob ? '1' : '0', blob ?? '']),
  })) as number;
}

/**
 * Every task's packed string (one MGET) and its list, in one round trip without a script: through a
 * script, every line would be made a Lua string on its way, which cost Redis more than the reads. Not
 * atomic, and need not be: the packed strings are this batch's only (its lease), and a list that grows
 * meanwhile is seen by the replace, which checks its length.
 */
async function readBatch(redis: Redis, keys: Keys, ids: string[]): Promise<Array<{ packed: Buffer; list: Buffer[] }>> {
  const pipeline = redis.pipeline().mgetBuffer(...ids.map((id) => keys.packedEvents(id)));
  for (const id of ids) pipeline.lrangeBuffer(keys.events(id), 0, -1);
  const [packed, ...lists] = await execPipeline(pipeline);
  return ids.map((_, index) => ({
    packed: (packed as Array<Buffer | null>)[index] ?? Buffer.alloc(0),
    list: lists[index] as Buffer[],
  }));
}

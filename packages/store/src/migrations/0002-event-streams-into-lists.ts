/**
 * Storage version 2: a task's events in its list only. An earlier version kept them in a stream per
 * task (`<prefix>:task:<id>:events`, one entry per write, its events one per line), which every reader
 * and the compaction then had to read beside the list. Each stream left joins its task's list, in
 * order of seq (merge-event-stream.lua), and is removed.
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { luaScript } from '../lua-script.js';

const MERGE = luaScript({
  dir: new URL('../../scripts/', import.meta.url),
  name: 'merge-event-stream',
  keys: ['streamKey', 'listKey'],
  args: ['entries'],
});

/** Times a stream that changed while it was read is read again before the migration gives up for now. */
const ATTEMPTS = 5;

/** The key of the stream an earlier version kept a task's events in. */
export function eventStreamKey(keys: Keys, taskId: string): string {
  return `${keys.task(taskId)}:events`;
}

export async function mergeEventStreams(redis: Redis, keys: Keys): Promise<number> {
  const taskPrefix = keys.task('');
  let merged = 0;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${taskPrefix}*:events`, 'COUNT', 1000);
    cursor = next;
    for (const streamKey of found) {
      const taskId = streamKey.slice(taskPrefix.length, -':events'.length);
      if ((await redis.type(streamKey)) !== 'stream') continue;
      for (let attempt = 1; ; attempt++) {
        const entries = await redis.xrange(streamKey, '-', '+');
        const lines = entries.flatMap(([, fields]) => (fields[1] ?? '').split('\n').filter(Boolean));
        const done = await MERGE.run(redis, {
          keys: { streamKey, listKey: keys.events(taskId) },
          args: { entries: entries.length },
          restArgs: lines,
        });
        if (done === 1) break;
        // A process of the earlier version wrote to it meanwhile: read it again; the next start goes on.
        if (attempt === ATTEMPTS) throw new Error(`the event stream of task ${taskId} kept changing`);
      }
      merged++;
    }
  } while (cursor !== '0');
  return merged;
}

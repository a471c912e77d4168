/** Reading a task's event stream back (the envelope is the contract's `TaskEvent`). */
import type { Redis } from 'ioredis';
import type { TaskEvent } from '@agentq/contract';

/** Events with `seq` greater than `afterSeq`, oldest first, at most `count`. */
export async function readEvents(options: { redis: Redis; key: string; afterSeq?: number; count?: number }): Promise<TaskEvent[]> {
  const start = options.afterSeq ? `(${options.afterSeq}-0` : '-';
  const entries = options.count
    ? await options.redis.xrange(options.key, start, '+', 'COUNT', options.count)
    : await options.redis.xrange(options.key, start, '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] ?? '{}') as TaskEvent);
}

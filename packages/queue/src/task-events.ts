/** The event envelope of DESIGN.md, and reading a task's event stream back. */
import type { Redis } from 'ioredis';
import type { EventType } from '@agentq/core';

export interface TaskEvent {
  id: string;
  taskId: string;
  rootId: string;
  seq: number;
  ts: string;
  type: EventType;
  agent?: string;
  worker?: string;
  step?: number;
  data: Record<string, unknown>;
}

/** Events with `seq` greater than `afterSeq`, oldest first, at most `count`. */
export async function readEvents(options: { redis: Redis; key: string; afterSeq?: number; count?: number }): Promise<TaskEvent[]> {
  const start = options.afterSeq ? `(${options.afterSeq}-0` : '-';
  const entries = options.count
    ? await options.redis.xrange(options.key, start, '+', 'COUNT', options.count)
    : await options.redis.xrange(options.key, start, '+');
  return entries.map(([, fields]) => JSON.parse(fields[1] ?? '{}') as TaskEvent);
}

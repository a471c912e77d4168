/**
 * How full Redis is against its `maxmemory`, for the API to refuse new tasks before Redis refuses every
 * write (AGENTQ_REDIS_FULL_PERCENT): past its maxmemory (with the default `noeviction`), Redis answers
 * OOM to the writes of the tasks already stored too, which then cannot end. Read with `INFO memory`
 * once a second, and again whenever what this process let through since (at twice its requests' bytes)
 * may have brought Redis within a tenth of the line: a burst of submits does not pass it between two
 * readings. (Other API processes' bursts meanwhile are not seen until the next reading.)
 */
import type { Redis } from 'ioredis';

/** Redis's memory when it is past the line. */
export interface RedisFull {
  usedBytes: number;
  maxBytes: number;
  /** The line, in percent of maxBytes. */
  percent: number;
}

/** Whether an error is Redis refusing a write because it is past its maxmemory. */
export function isRedisOutOfMemory(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('OOM ');
}

/**
 * What storing a request's bytes may add to Redis, at most about: a task's record holds its prompt, and
 * its memory (once it runs) a copy of it.
 */
const GROWTH = 2;

export class RedisMemory {
  private reading: { used: number; max: number; at: number } | undefined;
  /** Bytes of the requests let through since the reading. */
  private added = 0;

  constructor(
    private readonly redis: Redis,
    /** The line, in percent of maxmemory. */
    readonly percent: number,
    private readonly everyMs = 1_000,
  ) {}

  /**
   * Undefined while Redis has room for a request of `bytes` more (or has no maxmemory), which is then
   * counted until the next reading; else how full Redis is.
   */
  async full(bytes = 0): Promise<RedisFull | undefined> {
    const line = (max: number) => (max * this.percent) / 100;
    const last = this.reading;
    const estimate = (reading: { used: number }) => reading.used + (this.added + bytes) * GROWTH;
    if (!last || Date.now() - last.at >= this.everyMs || (last.max > 0 && estimate(last) >= 0.9 * line(last.max)))
      await this.read();
    const reading = this.reading!;
    if (reading.max > 0 && estimate(reading) >= line(reading.max))
      return { usedBytes: reading.used, maxBytes: reading.max, percent: this.percent };
    this.added += bytes;
    return undefined;
  }

  private async read(): Promise<void> {
    const { used, max } = await readRedisMemory(this.redis);
    this.reading = { used, max, at: Date.now() };
    this.added = 0;
  }
}

/** What Redis says of its memory (`INFO memory`): bytes used, its maxmemory (0: none), and what it does past it. */
export async function readRedisMemory(redis: Redis): Promise<{ used: number; max: number; policy: string }> {
  const info = await redis.info('memory');
  const field = (name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
  return {
    used: Number(field('used_memory') ?? 0),
    max: Number(field('maxmemory') ?? 0),
    policy: field('maxmemory_policy') ?? 'noeviction',
  };
}

/**
 * Why Redis may delete agentq's keys by itself: with a maxmemory and a policy that evicts keys past it,
 * a task's record, its events or its BullMQ job can vanish without a trace. Undefined when it never
 * evicts (`noeviction`, agentq's default and BullMQ's requirement, or no maxmemory).
 */
export function evictionWarning(memory: { max: number; policy: string }): string | undefined {
  const { max, policy } = memory;
  if (max === 0 || policy === 'noeviction') return undefined;
  return `Redis evicts keys once it holds its maxmemory (maxmemory-policy ${policy}): a task's record, its events or its job may vanish. Set maxmemory-policy noeviction; agentq refuses new tasks before Redis is full (AGENTQ_REDIS_FULL_PERCENT).`;
}

/** Says `evictionWarning` through `log` when Redis evicts keys (an API's or a worker's start); never fails. */
export async function warnIfEvicting(redis: Redis, log: (line: string) => void): Promise<void> {
  // A warning only: a Redis that cannot be asked is said elsewhere (watchRedis), and start goes on.
  const warning = await readRedisMemory(redis).then(evictionWarning, () => undefined);
  if (warning) log(warning);
}

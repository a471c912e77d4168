/**
 * Concurrency keys: at most `limit` tasks of a tenant that name the same key run at once, across every
 * worker and pool. A task that names a key waits in the key's own queue, in submit order, holding no
 * worker slot and no job; it reaches its tenant's list for its pool (and so fair admission, then a
 * worker) only when a place is free, and holds its place until it ends. A turn of the gate (gate.lua)
 * runs after a submit, after a task with a key ends (on the worker, or the API's cancel), and once a
 * second on every worker for every key with waiting tasks: a process that died between a task's end
 * and its key's turn delays the next task by a second at most, never forever.
 */
import type { Redis } from 'ioredis';
import { cellPipeline, concurrencyBase, luaScript, PRIORITY_STEP, type CellKeys } from '@agentq/store';
import type { FairAdmission } from './fair-admission.js';

const GATE = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'gate',
  keys: ['holdersKey', 'queueKey', 'pendingKey', 'arrivalsKey'],
  args: ['base', 'holders', 'candidates'],
  constants: { PRIORITY_STEP },
});

/** How many tasks at the head of a key's queue one call of the gate looks at (the next ones at another). */
const HEAD = 10;
/** How many times a turn reads again when its key changed meanwhile. */
const REREADS = 20;

/** How many keys with waiting tasks one sweep turns at most (the rest at the next). */
const SWEEP_KEYS = 500;

export class ConcurrencyGate {
  constructor(
    private readonly redis: Redis,
    /** The cell whose keys it lets through (a key's tasks live in its cell: `Keys.cellOfKey`). */
    private readonly keys: CellKeys,
    private readonly admission: FairAdmission,
  ) {}

  /** The base of a tenant's key, as tasks and the gate name it. */
  baseOf(tenant: string, key: string): string {
    return concurrencyBase(tenant, key);
  }

  /** A turn of each key, then of admission for each pool a task joined: it starts at once if there is room. */
  async letThrough(bases: Iterable<string>): Promise<void> {
    const pools: string[] = [];
    for (const base of new Set(bases)) pools.push(...(await this.turn(base)));
    if (pools.length) await this.admission.admitListed(pools);
  }

  /** A task that may hold a key ended (or waits no more): a turn of its key, when it names one. */
  async ended(task: { tenant: string; concurrencyKey?: string | undefined }): Promise<void> {
    if (task.concurrencyKey !== undefined) await this.letThrough([this.baseOf(task.tenant, task.concurrencyKey)]);
  }

  /**
   * A turn of one key (`Keys.concurrencyBase`); answers the pools tasks joined (for a turn of admission).
   * Its holders and the head of its queue are read first, to declare their keys to the script.
   */
  async turn(base: string): Promise<string[]> {
    const joined: string[] = [];
    for (let reads = 0; reads < REREADS; reads++) {
      const [holders, head] = await Promise.all([
        this.redis.smembers(this.keys.concurrencyHolders(base)),
        this.redis.zrange(this.keys.concurrencyQueue(base), 0, HEAD - 1),
      ]);
      // A task's pool and tenant never change: read once, to name its list.
      const owners = (
        (await head
          .reduce((pipeline, id) => pipeline.hmget(this.keys.task(id), 'agent', 'tenant'), cellPipeline(this.redis))
          .exec()) ?? []
      ).map(([, fields]) => fields as Array<string | null>);
      // A task gone (deleted) has no pool: the script drops it, its list named but never joined.
      const candidates = head.map((id, index) => {
        const [pool, tenant] = owners[index] ?? [];
        return { id, pool: pool ?? 'none', tenant: tenant ?? 'default' };
      });
      const [pools, reread] = (await GATE.run(this.redis, {
        keys: {
          holdersKey: this.keys.concurrencyHolders(base),
          queueKey: this.keys.concurrencyQueue(base),
          pendingKey: this.keys.concurrencyPending,
          arrivalsKey: this.keys.fairArrivals,
        },
        args: { base, holders: holders.length, candidates: candidates.length },
        restKeys: [
          ...holders.map((id) => this.keys.task(id)),
          ...candidates.flatMap((candidate) => [
            this.keys.task(candidate.id),
            this.keys.fairRing(candidate.pool),
            this.keys.fairList(candidate.pool, candidate.tenant),
          ]),
        ],
        restArgs: [...holders, ...candidates.flatMap((candidate) => [candidate.id, candidate.pool, candidate.tenant])],
      })) as [string[], number];
      joined.push(...pools);
      if (reread !== 1) return joined;
    }
    return joined;
  }

  /** A turn of each key with waiting tasks (at most SWEEP_KEYS at a time), and of admission after. */
  async sweep(): Promise<void> {
    await this.letThrough(await this.redis.srandmember(this.keys.concurrencyPending, SWEEP_KEYS));
  }
}

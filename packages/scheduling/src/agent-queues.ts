/**
 * One BullMQ queue per pool (the planner's and each agent's of the configuration file), and the fair
 * admission of new work into them (fair-admission.ts). What goes in the queues, and how, is the job
 * catalog's (jobs.ts).
 */
import { AgentqError, type AgentPool } from '@agentq/contract';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { FairAdmission, type FairOptions } from './fair-admission.js';
import { ConcurrencyGate } from './concurrency-gate.js';
import type { Keys } from '@agentq/store';

/** Work was sent to a pool this process does not know: an agent its configuration file does not declare. */
export class UnknownPoolError extends AgentqError {
  readonly code = 'unknown_agent';
  readonly retryable = false;
  constructor(
    readonly pool: string,
    readonly pools: readonly string[],
  ) {
    super(
      `There is no agent "${pool}" in this configuration; agents: ${pools.filter((name) => name !== 'planner').join(', ')}.`,
    );
  }
}

export interface AgentQueues {
  /** Every pool's name, the planner's first. */
  readonly pools: readonly AgentPool[];
  /** A pool's queue; an UnknownPoolError for a name that is not a pool. */
  queue(pool: AgentPool): Queue;
  readonly admission: FairAdmission;
  /** Concurrency keys: what lets a keyed task through to its tenant's list. */
  readonly gate: ConcurrencyGate;
}

export function createAgentQueues(options: {
  connection: Redis;
  keys: Keys;
  /** The pools: the planner's and the configuration file's agents (`poolNames(config)`). */
  pools: readonly AgentPool[];
  fair?: FairOptions;
}): AgentQueues {
  const byPool = new Map<AgentPool, Queue>();
  for (const pool of options.pools) {
    const queue = new Queue(pool, { connection: options.connection, prefix: options.keys.bullPrefix });
    // Its errors are its connection's (watchRedis says those once); a failed call fails where it was made.
    queue.on('error', () => undefined);
    byPool.set(pool, queue);
  }
  const pools = [...byPool.keys()];
  const queue = (pool: AgentPool): Queue => {
    const found = byPool.get(pool);
    if (!found) throw new UnknownPoolError(pool, pools);
    return found;
  };
  const admission = new FairAdmission(options.connection, options.keys, queue, options.fair);
  return { pools, queue, admission, gate: new ConcurrencyGate(options.connection, options.keys, admission) };
}

export async function closeQueues(queues: AgentQueues): Promise<void> {
  await Promise.all(queues.pools.map((pool) => queues.queue(pool).close()));
}

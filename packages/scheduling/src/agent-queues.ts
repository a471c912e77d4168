/**
 * One BullMQ queue per pool (the planner's and each agent's of the configuration file) in each cell
 * (keys.ts), and the fair admission of new work into them (fair-admission.ts) and concurrency keys'
 * gates (concurrency-gate.ts), per cell too: a task's job, its tenant's list and its key's queue are in
 * the task's cell. What goes in the queues, and how, is the job catalog's (jobs.ts).
 */
import { AgentqError, type AgentPool } from '@agentq/contract';
import { Queue, type JobType } from 'bullmq';
import type { Redis } from 'ioredis';
import { FairAdmission, type FairOptions } from './fair-admission.js';
import { ConcurrencyGate } from './concurrency-gate.js';
import { concurrencyBase, type CellKeys, type Keys } from '@agentq/store';

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

/** A cell's queues, admission and gate. */
export interface CellQueues {
  readonly keys: CellKeys;
  /** A pool's queue in this cell; an UnknownPoolError for a name that is not a pool. */
  queue(pool: AgentPool): Queue;
  readonly admission: FairAdmission;
  /** Concurrency keys: what lets a keyed task through to its tenant's list. */
  readonly gate: ConcurrencyGate;
}

export interface AgentQueues {
  /** Every pool's name, the planner's first. */
  readonly pools: readonly AgentPool[];
  /** Every cell's, by number. */
  readonly cells: readonly CellQueues[];
  /** The cell of a task (and its whole plan). */
  of(taskId: string): CellQueues;
  /** A turn of admission in each cell and pool these tasks just joined (never fails: see `admitListed`). */
  admitListed(tasks: ReadonlyArray<{ id: string; pool: AgentPool }>): Promise<void>;
  /** A turn of each of a tenant's concurrency keys, in its cell (`ConcurrencyGate.letThrough`). */
  letThrough(tenant: string, keys: readonly string[]): Promise<void>;
  /** A pool's jobs in these states, in every cell; `delayed` counts the tasks in its due sets too (due-tasks.ts). */
  jobCounts(pool: AgentPool, ...states: JobType[]): Promise<Record<string, number>>;
  /** How many of a pool's tasks wait in their tenants' lists, by tenant, in every cell. */
  waiting(pool: AgentPool): Promise<Record<string, number>>;
}

/** Counts by name, added up. */
function added(counts: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const total: Record<string, number> = {};
  for (const count of counts)
    for (const [name, value] of Object.entries(count)) total[name] = (total[name] ?? 0) + value;
  return total;
}

export function createAgentQueues(options: {
  connection: Redis;
  keys: Keys;
  /** The pools: the planner's and the configuration file's agents (`poolNames(config)`). */
  pools: readonly AgentPool[];
  fair?: FairOptions;
}): AgentQueues {
  const pools = [...new Set(options.pools)];
  const cells = options.keys.cells.map((keys): CellQueues => {
    const byPool = new Map<AgentPool, Queue>();
    for (const pool of pools) {
      const queue = new Queue(pool, { connection: options.connection, prefix: keys.bullPrefix });
      // Its errors are its connection's (watchRedis says those once); a failed call fails where it was made.
      queue.on('error', () => undefined);
      byPool.set(pool, queue);
    }
    const queue = (pool: AgentPool): Queue => {
      const found = byPool.get(pool);
      if (!found) throw new UnknownPoolError(pool, pools);
      return found;
    };
    const admission = new FairAdmission(options.connection, keys, queue, options.fair);
    return { keys, queue, admission, gate: new ConcurrencyGate(options.connection, keys, admission) };
  });
  const of = (taskId: string) => cells[options.keys.cellOf(taskId).cell]!;
  return {
    pools,
    cells,
    of,
    async admitListed(tasks) {
      const byCell = new Map<CellQueues, AgentPool[]>();
      for (const task of tasks) {
        const cell = of(task.id);
        if (!byCell.has(cell)) byCell.set(cell, []);
        byCell.get(cell)!.push(task.pool);
      }
      await Promise.all([...byCell].map(([cell, listed]) => cell.admission.admitListed(listed)));
    },
    async letThrough(tenant, keys) {
      const byCell = new Map<CellQueues, string[]>();
      for (const key of keys) {
        const base = concurrencyBase(tenant, key);
        const cell = cells[options.keys.cellOfKey(base).cell]!;
        if (!byCell.has(cell)) byCell.set(cell, []);
        byCell.get(cell)!.push(base);
      }
      await Promise.all([...byCell].map(([cell, bases]) => cell.gate.letThrough(bases)));
    },
    async jobCounts(pool, ...states) {
      const counts = added(await Promise.all(cells.map((cell) => cell.queue(pool).getJobCounts(...states))));
      // A run that waits leaves no delayed job (its task is due later): counted where its job used to be.
      if (states.includes('delayed')) {
        const due = await Promise.all(cells.map((cell) => cell.admission.dueCount(pool)));
        counts.delayed = (counts.delayed ?? 0) + due.reduce((total, count) => total + count, 0);
      }
      return counts;
    },
    async waiting(pool) {
      return added(await Promise.all(cells.map((cell) => cell.admission.waiting(pool))));
    },
  };
}

export async function closeQueues(queues: AgentQueues): Promise<void> {
  await Promise.all(queues.cells.flatMap((cell) => queues.pools.map((pool) => cell.queue(pool).close())));
}

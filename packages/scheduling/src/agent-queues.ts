/**
 * One BullMQ queue per pool, and the fair admission of new work into them (fair-admission.ts). What
 * goes in the queues, and how, is the job catalog's (jobs.ts).
 */
import { AGENT_POOLS, type AgentPool } from '@agentq/contract';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { FairAdmission, type FairOptions } from './fair-admission.js';
import type { Keys } from '@agentq/store';

export type AgentQueues = Record<AgentPool, Queue> & { readonly admission: FairAdmission };

export function createAgentQueues(options: { connection: Redis; keys: Keys; fair?: FairOptions }): AgentQueues {
  const queues = Object.fromEntries(
    AGENT_POOLS.map((pool) => {
      const queue = new Queue(pool, { connection: options.connection, prefix: options.keys.bullPrefix });
      // Its errors are its connection's (watchRedis says those once); a failed call fails where it was made.
      queue.on('error', () => undefined);
      return [pool, queue];
    }),
  ) as Record<AgentPool, Queue>;
  return Object.assign(queues, {
    admission: new FairAdmission(options.connection, options.keys, queues, options.fair),
  });
}

export async function closeQueues(queues: AgentQueues): Promise<void> {
  await Promise.all(AGENT_POOLS.map((pool) => queues[pool].close()));
}

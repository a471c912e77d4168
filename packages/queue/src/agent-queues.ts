/** One BullMQ queue per pool. What goes in them, and how, is the job catalog's (jobs.ts). */
import { AGENT_POOLS, type AgentPool } from '@agentq/contract';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';

export type AgentQueues = Record<AgentPool, Queue>;

export function createAgentQueues(options: { connection: Redis; keys: Keys }): AgentQueues {
  return Object.fromEntries(
    AGENT_POOLS.map((pool) => {
      const queue = new Queue(pool, { connection: options.connection, prefix: options.keys.bullPrefix });
      // Its errors are its connection's (watchRedis says those once); a failed call fails where it was made.
      queue.on('error', () => undefined);
      return [pool, queue];
    }),
  ) as AgentQueues;
}

export async function closeQueues(queues: AgentQueues): Promise<void> {
  await Promise.all(Object.values(queues).map((queue) => queue.close()));
}

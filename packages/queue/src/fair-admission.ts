/**
 * Fair tenants. BullMQ's open-source queue has no groups: a pool's queue runs in priority order, so a
 * tenant's 5,000 queued tasks would all start before another tenant's next one. New work therefore
 * does not go straight into the pool's queue. It waits in its tenant's own list for that pool (a sorted
 * set: priority first, then arrival), and is admitted into the queue a few at a time, weighted fair
 * across tenants: each tenant has a virtual time in the pool's ring (a sorted set), an admission
 * advances it by 1 / the tenant's weight, and the tenant with the least goes next; a tenant that
 * arrives joins at the least time of the ring (it gets no credit for having been away). The queue
 * itself holds a short backlog (AGENTQ_FAIR_BACKLOG per pool), so a tenant that arrives waits for
 * that backlog, not for another tenant's batch. Priorities hold within a tenant.
 *
 * Admission runs wherever work appears or ends: the API after a submit, a worker after each of its
 * jobs (coalesced per pool) and once a second. A cycle reads the backlog, pops what fits in one
 * script, then adds the jobs (job id = task id: never twice). What was popped is leased until its jobs
 * are added; a process that died in between leaves leases that any worker admits again (`recover`).
 */
import type { AgentPool } from '@agentq/contract';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { enqueue, type NewJob } from './jobs.js';
import type { Keys } from './keys.js';

/** A task ready to run, waiting for its turn in its pool. */
export interface WaitingTask {
  taskId: string;
  tenant: string;
  pool: AgentPool;
  /** 1 (lowest) to 10 (highest). */
  priority: number;
}

export interface FairOptions {
  /** How many jobs a pool's queue holds waiting at most; more wait in their tenants' lists. Default 100. */
  backlog?: number;
  /** Tenants' shares (default 1 each); `*` for every tenant not named. */
  weights?: Record<string, number>;
  /** How long popped tasks may take to become jobs before another process adds them. Default 30 s. */
  leaseMs?: number;
}

/** Scores keep priority first (2^40 apart), then arrival: exact as doubles up to 2^40 arrivals. */
const PRIORITY_STEP = 2 ** 40;

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: [ring, tenant's list, arrival counter]; ARGV: [tenant, then each task's id and priority]. */
const WAIT = `
local n = (#ARGV - 1) / 2
local first = redis.call('INCRBY', KEYS[3], n) - n
for i = 1, n do
  redis.call('ZADD', KEYS[2], (11 - tonumber(ARGV[2 * i + 1])) * ${PRIORITY_STEP} + first + i, ARGV[2 * i])
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local least = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  redis.call('ZADD', KEYS[1], least[2] or 0, ARGV[1])
end
return n
`;

/**
 * KEYS: [ring, leases, the queue's wait list, its prioritized set]; ARGV: [tenant list prefix, backlog,
 * lease ms, weights JSON, least batch]. Pops what fits under the backlog (the queue's waiting jobs and
 * the leased ones count), the tenant of least virtual time first; answers how many tenants still wait,
 * then each popped task as id, tenant, score. While the queue still holds a batch's worth, fewer than a
 * batch are not worth a cycle's round trips: it waits for more room.
 */
const ADMIT = `${NOW}
local lease, weights = tonumber(ARGV[3]), cjson.decode(ARGV[4])
local out = {0}
if redis.call('EXISTS', KEYS[1]) == 0 then return out end
local queued = redis.call('LLEN', KEYS[3]) + redis.call('ZCARD', KEYS[4]) + redis.call('ZCARD', KEYS[2])
local want, batch = tonumber(ARGV[2]) - queued, tonumber(ARGV[5])
if want < batch and queued >= batch then
  out[1] = redis.call('ZCARD', KEYS[1])
  return out
end
local admitted = 0
while admitted < want do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if #head == 0 then break end
  local tenant, vtime = head[1], tonumber(head[2])
  local list = ARGV[1] .. tenant
  local popped = redis.call('ZPOPMIN', list)
  if #popped > 0 then
    admitted = admitted + 1
    redis.call('ZADD', KEYS[2], now + lease, popped[1])
    out[#out + 1] = popped[1]
    out[#out + 1] = tenant
    out[#out + 1] = popped[2]
  end
  if #popped == 0 or redis.call('EXISTS', list) == 0 then
    redis.call('ZREM', KEYS[1], tenant)
  else
    redis.call('ZADD', KEYS[1], vtime + 1 / (weights[tenant] or weights['*'] or 1), tenant)
  end
end
out[1] = redis.call('ZCARD', KEYS[1])
return out
`;

interface FairCommands {
  agentqWait(ring: string, list: string, counter: string, tenant: string, ...idsAndPriorities: string[]): Promise<number>;
  agentqAdmit(ring: string, leases: string, wait: string, prioritized: string, listPrefix: string, backlog: number, leaseMs: number, weights: string, batch: number): Promise<Array<string | number>>;
}

export class FairAdmission {
  private readonly commands: FairCommands;
  private readonly backlog: number;
  private readonly weights: string;
  private readonly leaseMs: number;
  /** Per pool: how many tenants still waited after its last cycle. */
  private readonly waitingTenants = new Map<AgentPool, number>();
  /** Per pool: the cycle under way, and whether another was asked for meanwhile. */
  private readonly cycles = new Map<AgentPool, { running: Promise<number>; again: boolean }>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly queues: Record<AgentPool, Queue>,
    options: FairOptions = {},
  ) {
    redis.defineCommand('agentqWait', { numberOfKeys: 3, lua: WAIT });
    redis.defineCommand('agentqAdmit', { numberOfKeys: 4, lua: ADMIT });
    this.commands = redis as unknown as FairCommands;
    this.backlog = options.backlog ?? 100;
    this.weights = JSON.stringify(options.weights ?? {});
    this.leaseMs = options.leaseMs ?? 30_000;
  }

  /** Puts tasks in their tenants' lists, then admits what fits into each pool touched. */
  async add(tasks: readonly WaitingTask[]): Promise<void> {
    const groups = new Map<string, WaitingTask[]>();
    for (const task of tasks) {
      const key = `${task.pool}\n${task.tenant}`;
      const group = groups.get(key);
      if (group) group.push(task);
      else groups.set(key, [task]);
    }
    await Promise.all(
      [...groups.values()].map(([first, ...rest]) => {
        const { pool, tenant } = first!;
        const args = [first!, ...rest].flatMap((task) => [task.taskId, String(task.priority)]);
        return this.commands.agentqWait(this.keys.fairRing(pool), this.keys.fairList(pool, tenant), this.keys.fairArrivals, tenant, ...args);
      }),
    );
    await Promise.all([...new Set(tasks.map((task) => task.pool))].map((pool) => this.admit(pool)));
  }

  /**
   * Admits what fits into `pool`'s queue; answers how many. Calls while one runs are folded into one
   * more cycle after it (a worker asks after every job).
   */
  admit(pool: AgentPool): Promise<number> {
    const current = this.cycles.get(pool);
    if (current) {
      current.again = true;
      return current.running;
    }
    const state = { running: Promise.resolve(0), again: false };
    state.running = (async () => {
      let admitted = 0;
      try {
        do {
          state.again = false;
          admitted += await this.cycle(pool);
        } while (state.again);
      } finally {
        this.cycles.delete(pool);
      }
      return admitted;
    })();
    this.cycles.set(pool, state);
    return state.running;
  }

  /** Takes a task out of its tenant's list before it was admitted; answers whether it was there. */
  async withdraw(pool: AgentPool, tenant: string, taskId: string): Promise<boolean> {
    return (await this.redis.zrem(this.keys.fairList(pool, tenant), taskId)) === 1;
  }

  /** How many of `pool`'s tasks wait in their tenants' lists, by tenant. */
  async waiting(pool: AgentPool): Promise<Record<string, number>> {
    const tenants = await this.redis.zrange(this.keys.fairRing(pool), 0, -1);
    const counts = await Promise.all(tenants.map((tenant) => this.redis.zcard(this.keys.fairList(pool, tenant))));
    return Object.fromEntries(tenants.map((tenant, index) => [tenant, counts[index]!]));
  }

  /** Adds the jobs of tasks popped by a process that did not add them (its lease ran out); answers how many. */
  async recover(pool: AgentPool, read: (taskIds: string[]) => Promise<Array<{ tenant: string; priority: number; queued: boolean } | undefined>>): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const expired = await this.redis.zrangebyscore(this.keys.fairLeases(pool), '-inf', now, 'LIMIT', 0, 500);
    if (!expired.length) return 0;
    const records = await read(expired);
    const jobs = expired.flatMap((taskId, index) => {
      const record = records[index];
      return record?.queued ? [{ taskId, tenant: record.tenant, priority: record.priority }] : [];
    });
    await this.addJobs(pool, jobs);
    await this.redis.zrem(this.keys.fairLeases(pool), ...expired);
    return jobs.length;
  }

  /** Whether tenants' tasks wait for `pool` (as of its last cycle): a worker then admits after every job. */
  busy(pool: AgentPool): boolean {
    return this.waitingTenants.get(pool) !== 0;
  }

  private async cycle(pool: AgentPool): Promise<number> {
    const queue = this.queues[pool];
    const [tenants, ...popped] = await this.commands.agentqAdmit(
      this.keys.fairRing(pool),
      this.keys.fairLeases(pool),
      queue.keys.wait!,
      queue.keys.prioritized!,
      this.keys.fairList(pool, ''),
      this.backlog,
      this.leaseMs,
      this.weights,
      // A tenth of the backlog at a time, while the queue has that much left to run.
      Math.max(1, Math.floor(this.backlog / 10)),
    );
    this.waitingTenants.set(pool, Number(tenants));
    if (!popped.length) return 0;
    const jobs: Array<{ taskId: string; tenant: string; priority: number }> = [];
    for (let index = 0; index < popped.length; index += 3) {
      jobs.push({ taskId: String(popped[index]), tenant: String(popped[index + 1]), priority: 11 - Math.floor(Number(popped[index + 2]) / PRIORITY_STEP) });
    }
    await this.addJobs(pool, jobs);
    await this.redis.zrem(this.keys.fairLeases(pool), ...jobs.map((job) => job.taskId));
    return jobs.length;
  }

  private addJobs(pool: AgentPool, jobs: ReadonlyArray<{ taskId: string; tenant: string; priority: number }>): Promise<void> {
    return enqueue(
      this.queues,
      jobs.map((job): NewJob => ({ kind: 'agent', pool, payload: { taskId: job.taskId, tenant: job.tenant }, priority: job.priority })),
    );
  }
}

/**
 * Fair tenants. BullMQ's open-source queue has no groups: a pool's queue runs in order, so a tenant's
 * 5,000 queued tasks would all start before another tenant's next one. New work therefore
 * does not go straight into the pool's queue. It waits in its tenant's own list for that pool (a sorted
 * set: priority first, then arrival), and is admitted into the queue a few at a time, weighted fair
 * across tenants: each tenant has a virtual time in the pool's ring (a sorted set), an admission
 * advances it by 1 / the tenant's weight, and the tenant with the least goes next; a tenant that
 * arrives joins at the least time of the ring (it gets no credit for having been away). The queue
 * itself holds a short backlog (AGENTQ_FAIR_BACKLOG per pool), so a tenant that arrives waits for
 * that backlog, not for another tenant's batch. Priorities hold within a tenant: a task is admitted before
 * its tenant's tasks of lower priority, and its job (BullMQ's jobs have no priority here) waits behind
 * at most the backlog.
 *
 * Admission runs wherever work appears or ends: the API after a submit, a worker after its jobs (at
 * most a cycle per pool every 20 ms; after a cycle that admitted nothing, only once a batch's worth of
 * its jobs ended) and once a second. A cycle reads the backlog, pops what fits in one
 * script, then adds the jobs (job id = task id: never twice). What was popped is leased until its jobs
 * are added; a process that died in between leaves leases that any worker admits again (`recover`).
 * A task resumed after its user's answer skips the lists (it had its turn), but is leased the same way
 * by the commit that queues it again, until its job (`<task>-r<n>`, the record's `jobId`) is added.
 * A task whose run must wait (its model's endpoint down, a retry's backoff, a shared limit) goes back
 * through its tenant's list when the wait is over (due-tasks.ts), as its next job `<task>-r<n>`: a
 * waiting task holds no queue slot, and a batch that waited comes back a backlog at a time.
 */
import type { AgentPool } from '@agentq/contract';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { luaScript, PRIORITY_STEP, type CellKeys, type LeasedTask } from '@agentq/store';
import { enqueue, type NewJob } from './jobs.js';

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

const ADMIT = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'admit',
  keys: ['ringKey', 'leasesKey', 'waitKey', 'arrivalsKey', 'dueKey', 'runsKey'],
  args: ['backlog', 'leaseMs', 'weightsJson', 'batch', 'admit', 'joining', 'tenants'],
  constants: { PRIORITY_STEP },
});

/** How often a turn reads the ring again for a tenant that joined since (admit.lua: `unknown`). */
const RING_READS = 3;

export class FairAdmission {
  /** Per pool, the tenants this process saw in its ring: their lists are declared to each turn. */
  private readonly ringTenants = new Map<AgentPool, Set<string>>();
  private readonly backlog: number;
  private readonly weights: string;
  private readonly leaseMs: number;
  /** Per pool: the cycle under way, and whether another was asked for meanwhile. */
  private readonly cycles = new Map<AgentPool, { running: Promise<number>; again: boolean }>();
  /** Per pool: the cycle `admitSoon` will start, and how to call it off. */
  private readonly soon = new Map<AgentPool, { cycle: Promise<number>; cancel: () => void }>();
  /**
   * Per pool: how many more `admitSoon` calls (job ends) pass without a cycle. A cycle that admitted
   * nothing found no room for a batch, or nothing waiting (what a submit lists, its own cycle admits):
   * room for a batch takes a batch of jobs starting, and each cycle costs Redis a script call
   * whatever it finds. Without this, every worker took a cycle per pool and cell every 20 ms while it
   * ran jobs, however many workers there were.
   */
  private readonly patience = new Map<AgentPool, number>();
  /** What a cycle admits at least while the queue has that much left to run: a tenth of the backlog. */
  private readonly batch: number;
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    /** The cell whose lists and queues it admits from and to (each cell has its own). */
    private readonly keys: CellKeys,
    private readonly queues: (pool: AgentPool) => Queue,
    options: FairOptions = {},
  ) {
    this.backlog = options.backlog ?? 100;
    this.batch = Math.max(1, Math.floor(this.backlog / 10));
    this.weights = JSON.stringify(options.weights ?? {});
    this.leaseMs = options.leaseMs ?? 30_000;
  }

  /**
   * Puts tasks in their tenants' lists, then admits what fits into each pool touched: in the same
   * script call as the pool's last tenant's tasks (a submit is one tenant's: one round trip per pool).
   */
  async add(tasks: readonly WaitingTask[]): Promise<void> {
    const byPool = new Map<AgentPool, Map<string, WaitingTask[]>>();
    for (const task of tasks) {
      const tenants = byPool.get(task.pool) ?? new Map<string, WaitingTask[]>();
      byPool.set(task.pool, tenants);
      const waiting = tenants.get(task.tenant);
      if (waiting) waiting.push(task);
      else tenants.set(task.tenant, [task]);
    }
    await Promise.all(
      [...byPool].map(async ([pool, tenants]) => {
        const groups = [...tenants];
        for (const [index, [tenant, waiting]] of groups.entries()) {
          const last = index === groups.length - 1;
          await this.cycle(pool, last, { tenant, tasks: waiting });
        }
      }),
    );
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

  /**
   * A turn now for each pool that tasks just joined (CREATE lists them), so that an idle pool starts them
   * at once. Never fails: what a failed turn leaves waits in its tenants' lists, durably, for the turn
   * every worker takes each second.
   */
  async admitListed(pools: Iterable<AgentPool>): Promise<void> {
    await Promise.all([...new Set(pools)].map((pool) => this.admit(pool).catch(() => 0)));
  }

  /**
   * Admits within `delayMs`, one cycle for every call meanwhile: a worker asks after each of its jobs,
   * and a cycle per job cost a round trip per task for the few places a job frees. After a cycle that
   * admitted nothing, the next batch's worth of calls take none (`patience`).
   */
  admitSoon(pool: AgentPool, delayMs = 20): Promise<number> {
    const pending = this.soon.get(pool);
    if (pending) return pending.cycle;
    if (this.stopped) return Promise.resolve(0);
    const patience = this.patience.get(pool) ?? 0;
    if (patience > 0) {
      this.patience.set(pool, patience - 1);
      return Promise.resolve(0);
    }
    let cancel: () => void = () => undefined;
    const due = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(true), delayMs);
      timer.unref();
      cancel = () => {
        clearTimeout(timer);
        resolve(false);
      };
    });
    const cycle = due.then((isDue) => {
      this.soon.delete(pool);
      return isDue ? this.admit(pool) : 0;
    });
    this.soon.set(pool, { cycle, cancel });
    return cycle;
  }

  /** No cycle is started from now on by `admitSoon` (a worker that stopped taking jobs). */
  stop(): void {
    this.stopped = true;
    for (const { cancel } of this.soon.values()) cancel();
  }

  /**
   * Takes a task out of its tenant's list before it was admitted, or out of the due set while it
   * waits (`due`: its member there, dueMember); answers whether it was in either.
   */
  async withdraw(pool: AgentPool, tenant: string, taskId: string, due?: string): Promise<boolean> {
    const [listed, waited] = await Promise.all([
      this.redis.zrem(this.keys.fairList(pool, tenant), taskId),
      due ? this.redis.zrem(this.keys.fairDue(pool), due) : 0,
      // (its next run's job id, when it came back from a wait)
      this.redis.hdel(this.keys.fairRuns(pool), taskId),
    ]);
    return listed === 1 || waited === 1;
  }

  /** A task in the due set (`member`: due-tasks.ts) is due now; answers whether it was there. */
  async dueNow(pool: AgentPool, member: string): Promise<boolean> {
    return (await this.redis.zadd(this.keys.fairDue(pool), 'XX', 'LT', 'CH', 0, member)) === 1;
  }

  /** How many of `pool`'s tasks wait in its due set. */
  dueCount(pool: AgentPool): Promise<number> {
    return this.redis.zcard(this.keys.fairDue(pool));
  }

  /** Where a task of `pool` whose run must wait is put until it is due, and its next job id (a requeue's `due`). */
  dueOf(pool: AgentPool): { key: string; runsKey: string } {
    return { key: this.keys.fairDue(pool), runsKey: this.keys.fairRuns(pool) };
  }

  /** How many of `pool`'s tasks wait in their tenants' lists, by tenant. */
  async waiting(pool: AgentPool): Promise<Record<string, number>> {
    const tenants = await this.redis.zrange(this.keys.fairRing(pool), 0, -1);
    const counts = await Promise.all(tenants.map((tenant) => this.redis.zcard(this.keys.fairList(pool, tenant))));
    return Object.fromEntries(tenants.map((tenant, index) => [tenant, counts[index]!]));
  }

  /** Where, and for how long, a task of `pool` whose job is about to be added is leased (a commit's `lease`). */
  leaseOf(pool: AgentPool): { key: string; ms: number } {
    return { key: this.keys.fairLeases(pool), ms: this.leaseMs };
  }

  /** The jobs of these leased tasks were added. */
  async endLeases(pool: AgentPool, taskIds: readonly string[]): Promise<void> {
    if (taskIds.length) await this.redis.zrem(this.keys.fairLeases(pool), ...taskIds);
  }

  /** Adds the jobs of leased tasks whose process did not add them (the lease ran out); answers how many. */
  async recover(pool: AgentPool, read: (taskIds: string[]) => Promise<Array<LeasedTask | undefined>>): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const expired = await this.redis.zrangebyscore(this.keys.fairLeases(pool), '-inf', now, 'LIMIT', 0, 500);
    if (!expired.length) return 0;
    const records = await read(expired);
    const jobs = expired.flatMap((taskId, index) => {
      const record = records[index];
      return record?.queued ? [{ taskId, tenant: record.tenant, jobId: record.jobId }] : [];
    });
    await this.addJobs(pool, jobs);
    await this.endLeases(pool, expired);
    return jobs.length;
  }

  /** Puts `waiting` (if any) in its tenant's list, then (with `admit`) admits what fits; answers how many were admitted. */
  private async cycle(
    pool: AgentPool,
    admit = true,
    waiting?: { tenant: string; tasks: readonly WaitingTask[] },
  ): Promise<number> {
    const queue = this.queues(pool);
    const known = this.ringTenants.get(pool) ?? new Set<string>();
    this.ringTenants.set(pool, known);
    if (waiting) known.add(waiting.tenant);
    const popped: Array<string | number> = [];
    for (let read = 1; ; read++) {
      const tenants = [...known];
      const [admitted, unknown] = (await ADMIT.run(this.redis, {
        keys: {
          ringKey: this.keys.fairRing(pool),
          leasesKey: this.keys.fairLeases(pool),
          waitKey: queue.keys.wait!,
          arrivalsKey: this.keys.fairArrivals,
          dueKey: this.keys.fairDue(pool),
          runsKey: this.keys.fairRuns(pool),
        },
        args: {
          backlog: this.backlog,
          leaseMs: this.leaseMs,
          weightsJson: this.weights,
          batch: this.batch,
          admit: admit ? '1' : '0',
          joining: waiting?.tenant ?? '',
          tenants: tenants.length,
        },
        restKeys: tenants.map((tenant) => this.keys.fairList(pool, tenant)),
        // The tasks joining only on the first call: they are in their list after it.
        restArgs: [
          ...tenants,
          ...(read === 1 ? (waiting?.tasks.flatMap((task) => [task.taskId, String(task.priority)]) ?? []) : []),
        ],
      })) as [Array<string | number>, number | string[]];
      popped.push(...admitted);
      if (read === RING_READS || unknown === 0) break;
      // Tasks of tenants it did not declare are due: their lists are declared to the next turn.
      if (Array.isArray(unknown)) for (const tenant of unknown) known.add(tenant);
      // A tenant joined the ring since this process last read it (another process listed its tasks).
      else for (const tenant of await this.redis.zrange(this.keys.fairRing(pool), 0, -1)) known.add(tenant);
    }
    if (admit) this.patience.set(pool, popped.length ? 0 : this.batch - 1);
    if (!popped.length) return 0;
    const jobs: Array<{ taskId: string; tenant: string; jobId?: string }> = [];
    for (let index = 0; index < popped.length; index += 3) {
      const jobId = String(popped[index + 2]);
      jobs.push({ taskId: String(popped[index]), tenant: String(popped[index + 1]), ...(jobId ? { jobId } : {}) });
    }
    await this.addJobs(pool, jobs);
    await this.endLeases(
      pool,
      jobs.map((job) => job.taskId),
    );
    return jobs.length;
  }

  private addJobs(
    pool: AgentPool,
    jobs: ReadonlyArray<{ taskId: string; tenant: string; jobId?: string | undefined }>,
  ): Promise<void> {
    return enqueue(
      this.queues,
      jobs.map((job): NewJob => ({
        kind: 'agent',
        pool,
        payload: { taskId: job.taskId, tenant: job.tenant },
        ...(job.jobId ? { jobId: job.jobId } : {}),
      })),
    );
  }
}

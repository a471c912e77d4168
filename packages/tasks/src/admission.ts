/**
 * The one gate every way of creating work passes (a submit, a retry, a bulk retry, a fork, a schedule): Redis's
 * room (RedisFullError), the tenant's daily limit (DailyLimitError), and, for work made of many tasks
 * checked before any is made (a bulk retry), the tenant's room (NoRoomError). The tenant's room for
 * each new task is also checked where it is stored, in the call that stores it (tenant-room.ts), so that
 * requests sent at the same moment cannot pass it together (a schedule's, in the script that saves it:
 * schedule-store.ts).
 *
 * A new way of creating work adds its name to WORK_ACTIONS; the compiler then asks for its words in
 * every message that names it.
 */
import { AgentqError } from '@agentq/contract';
import {
  assertRoom,
  readRoomUsage,
  tenantLimitReached,
  type RedisFull,
  type RedisMemory,
  type RoomLimits,
  type TaskStore,
} from '@agentq/store';

export const WORK_ACTIONS = ['submit', 'retry', 'fork', 'schedule'] as const;
/** A way of creating work. */
export type WorkAction = (typeof WORK_ACTIONS)[number];

/** Each action's past participle, for "Nothing was ..." */
export const ACTION_DONE: Record<WorkAction, string> = {
  submit: 'submitted',
  retry: 'retried',
  fork: 'forked',
  schedule: 'scheduled',
};

/** What asks to be let in: whose work, how it is made, and (when known) how many tasks and bytes. */
export interface AdmitRequest {
  tenant: string;
  action: WorkAction;
  /** Tasks made at once, checked against the tenant's room before any is made (a bulk retry). */
  tasks?: number;
  /** About what storing them adds to Redis. */
  bytes?: number;
}

/** The tenant spent its daily limit (tenants.<t>.limits.tokensPerDay or usdPerDay): nothing new until the UTC day ends. */
export class DailyLimitError extends AgentqError {
  readonly code = 'daily_limit';
  readonly retryable = true;
  constructor(
    readonly action: WorkAction,
    readonly tenant: string,
    readonly spent: { tokens: number; usd: number },
    readonly limit: { tokens?: number; usd?: number },
    readonly resetsAt: Date,
  ) {
    const limits = [
      ...(limit.tokens !== undefined ? [`${limit.tokens} tokens`] : []),
      ...(limit.usd !== undefined ? [`$${limit.usd}`] : []),
    ].join(' or ');
    super(
      `Tenant ${tenant} reached its daily limit (spent ${spent.tokens} tokens and $${spent.usd.toFixed(4)}; limit ${limits}). Nothing was ${ACTION_DONE[action]}; ${action} again after ${resetsAt.toISOString()} (GET /v1/usage shows what it spent today).`,
    );
  }
}

/** Redis is past AGENTQ_REDIS_FULL_PERCENT of its maxmemory: new tasks would take the room stored ones need to end. */
export class RedisFullError extends AgentqError {
  readonly code = 'redis_full';
  readonly retryable = true;
  constructor(
    readonly action: WorkAction,
    readonly full: RedisFull,
  ) {
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    super(
      `Redis holds ${mib(full.usedBytes)} MiB of its maxmemory of ${mib(full.maxBytes)} MiB, past AGENTQ_REDIS_FULL_PERCENT (${full.percent}%): new tasks are refused so that the tasks already stored can run and end. Nothing was ${ACTION_DONE[action]}: ${action} again once ended tasks have expired or been deleted (DELETE /v1/tasks/:id, or a bulk delete), or once the operator gave Redis more memory.`,
    );
  }
}

export class Admission {
  constructor(
    private readonly options: {
      store: TaskStore;
      /** What a tenant may have: tasks not ended, stored, bytes written (the configuration's tenants.<t>.limits). */
      room: (tenant: string) => RoomLimits;
      /** Redis's fullness (AGENTQ_REDIS_FULL_PERCENT). */
      redisMemory: RedisMemory;
    },
  ) {}

  /** Lets the work in, or throws why not: RedisFullError, DailyLimitError, NoRoomError. */
  async admit(request: AdmitRequest): Promise<void> {
    const { store, redisMemory } = this.options;
    const [reached, full] = await Promise.all([
      tenantLimitReached(store, request.tenant),
      redisMemory.full(request.bytes ?? 0),
    ]);
    if (full) throw new RedisFullError(request.action, full);
    if (reached)
      throw new DailyLimitError(request.action, request.tenant, reached.spent, reached.limit, reached.resetsAt);
    if (request.tasks !== undefined) await this.ensureRoom(request.tenant, request.tasks, request.bytes ?? 0);
  }

  /** Room for `count` more of `tenant`'s tasks that write `bytes`, or NoRoomError. */
  private async ensureRoom(tenant: string, count: number, bytes: number): Promise<void> {
    assertRoom(tenant, count, bytes, await readRoomUsage(this.options.store, tenant), this.options.room(tenant));
  }
}

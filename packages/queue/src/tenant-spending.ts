/**
 * A tenant's spending of the day against its limit (AGENTQ_TENANT_LIMITS), as the commit script
 * counts it: a submit past the limit is refused until the day (UTC) is over.
 */
import type { TaskStore } from './task-store.js';

export interface TenantLimitReached {
  tenant: string;
  spent: { tokens: number; usd: number };
  limit: { tokens?: number; usd?: number };
  /** Midnight UTC, when the day's spending starts again from zero. */
  resetsAt: Date;
}

/** Whether `tenant` reached its daily limit; undefined when it did not, or has none. */
export async function tenantLimitReached(store: TaskStore, tenant: string, now = new Date()): Promise<TenantLimitReached | undefined> {
  const limit = store.tenantLimits?.[tenant] ?? store.tenantLimits?.['*'];
  if (!limit) return undefined;
  const [tokens, microUsd] = (await store.redis.hmget(store.keys.tenantSpend(tenant, now.toISOString().slice(0, 10)), 'tokens', 'microUsd')).map(Number);
  const reached = (limit.tokens !== undefined && tokens! >= limit.tokens) || (limit.microUsd !== undefined && microUsd! >= limit.microUsd);
  if (!reached) return undefined;
  const resetsAt = new Date(now);
  resetsAt.setUTCHours(24, 0, 0, 0);
  return {
    tenant,
    spent: { tokens: tokens!, usd: microUsd! / 1_000_000 },
    limit: { ...(limit.tokens !== undefined ? { tokens: limit.tokens } : {}), ...(limit.microUsd !== undefined ? { usd: limit.microUsd / 1_000_000 } : {}) },
    resetsAt,
  };
}

/**
 * A tenant's spending of the day against its limit (limits.tokensPerDay/usdPerDay), as the commit script
 * counts it: a submit past the limit is refused until the day (UTC) is over.
 */
import type { TaskStore, TenantLimits } from './task-store.js';
import { cellPipeline } from './cell-pipeline.js';
import { execPipeline } from './pipeline-replies.js';

export interface TenantLimitReached {
  tenant: string;
  spent: { tokens: number; usd: number };
  limit: { tokens?: number; usd?: number };
  /** Midnight UTC, when the day's spending starts again from zero. */
  resetsAt: Date;
}

/** What a tenant spent of a day, in tokens and micro-USD. */
export interface DaySpending {
  tokens: number;
  microUsd: number;
}

/** The tenant's daily limit (its own, else `*`'s); undefined when it has none. */
export function dailyLimitOf(store: TaskStore, tenant: string): TenantLimits[string] | undefined {
  return store.tenantLimits?.[tenant] ?? store.tenantLimits?.['*'];
}

/** The keys of `tenant`'s spending on the UTC day of `now`: one per cell; the day's is their sum. */
export function spendingKeys(store: TaskStore, tenant: string, now: Date): string[] {
  return store.keys.cells.map((cell) => cell.tenantSpend(tenant, now.toISOString().slice(0, 10)));
}

/** What `tenant` spent on the UTC day of `now`, in every cell. */
export async function spentOn(store: TaskStore, tenant: string, now: Date): Promise<DaySpending> {
  const read = cellPipeline(store.redis);
  for (const key of spendingKeys(store, tenant, now)) read.hmget(key, 'tokens', 'microUsd');
  return addSpending((await execPipeline(read)) as Array<Array<string | null>>);
}

/** The cells' spending of a day, added up. */
export function addSpending(rows: ReadonlyArray<ReadonlyArray<string | null>>): DaySpending {
  return rows
    .map(daySpending)
    .reduce((total, day) => ({ tokens: total.tokens + day.tokens, microUsd: total.microUsd + day.microUsd }), {
      tokens: 0,
      microUsd: 0,
    });
}

/** A day's spending from its hash's `tokens` and `microUsd` (absent: 0). */
export function daySpending([tokens, microUsd]: ReadonlyArray<string | null>): DaySpending {
  return { tokens: Number(tokens ?? 0), microUsd: Number(microUsd ?? 0) };
}

/** Whether `spent` is at or past `limit`. */
export function spentPast(spent: DaySpending, limit: TenantLimits[string]): boolean {
  return (
    (limit.tokens !== undefined && spent.tokens >= limit.tokens) ||
    (limit.microUsd !== undefined && spent.microUsd >= limit.microUsd)
  );
}

/** Midnight UTC after `now`: when the day's spending starts again from zero. */
export function dayEnd(now: Date): Date {
  const end = new Date(now);
  end.setUTCHours(24, 0, 0, 0);
  return end;
}

/** Whether `tenant` reached its daily limit; undefined when it did not, or has none. */
export async function tenantLimitReached(
  store: TaskStore,
  tenant: string,
  now = new Date(),
): Promise<TenantLimitReached | undefined> {
  const limit = dailyLimitOf(store, tenant);
  if (!limit) return undefined;
  const spent = await spentOn(store, tenant, now);
  if (!spentPast(spent, limit)) return undefined;
  return {
    tenant,
    spent: { tokens: spent.tokens, usd: spent.microUsd / 1_000_000 },
    limit: {
      ...(limit.tokens !== undefined ? { tokens: limit.tokens } : {}),
      ...(limit.microUsd !== undefined ? { usd: limit.microUsd / 1_000_000 } : {}),
    },
    resetsAt: dayEnd(now),
  };
}

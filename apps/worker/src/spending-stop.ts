/**
 * A run stops before its next model call once its root's budget, its tenant's daily limit or its
 * tenant's byte limit is spent: the commit script tells it with every commit (and its claim), and this says it in words.
 */
import type { StopCondition } from '@agentq/core';
import type { SpendingStop, TaskRecord } from '@agentq/store';

export function spendingStopMessage(stop: SpendingStop, record: TaskRecord): string {
  if (stop === 'budget')
    return `Stopped: the budget of task ${record.rootId} is spent (its tokens or cost, with every subtask, reached the budget set on submit).`;
  if (stop === 'tenant_bytes') {
    return `Stopped: tenant ${record.tenant}'s tasks have written their limit to Redis (tenants.${record.tenant}.limits.mb); delete ended tasks it no longer needs (DELETE /v1/tasks/:id), then retry this one.`;
  }
  return `Stopped: tenant ${record.tenant} reached its daily spending limit (tenants.${record.tenant}.limits.tokensPerDay or usdPerDay); it resets at 00:00 UTC.`;
}

/** The agent loop's stop condition for `spending` (the run's latest word on it). */
export function spendingIsWithin(spending: () => SpendingStop | undefined, record: TaskRecord): StopCondition {
  return () => {
    const stop = spending();
    return stop ? { reason: 'budget', message: spendingStopMessage(stop, record) } : undefined;
  };
}

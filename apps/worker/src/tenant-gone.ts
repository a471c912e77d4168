/**
 * A task whose tenant left the configuration file (its keys removed, agentq restarted) does not run on
 * the install's model any more, whatever held it until now (a run cut short, a concurrency key, a
 * rate limit, a slot): the run that claimed it fails it at once, with why, before anything is said or
 * called. Its concurrency key gets a turn, as after any end. Answers the task's status after it.
 */
import type { TaskStatus } from '@agentq/contract';
import type { TaskRecord } from '@agentq/store';
import { tenantGone, type ByRun } from '@agentq/tasks';
import type { JobContext } from './job-context.js';

export async function failForGoneTenant(
  context: JobContext,
  record: TaskRecord,
  by: ByRun,
): Promise<TaskStatus | undefined> {
  const message = `${tenantGone(record.tenant)}: its tasks do not run any more; this one failed before any model call. Once the tenant is back, retry it.`;
  const failed = await context.transitions.fail(record, { ...by, error: { code: 'tenant_gone', message } });
  if (failed.applied) await context.queues.of(record.id).gate.ended(record);
  context.logger.warn({ taskId: record.id, tenant: record.tenant }, 'task failed: its tenant has no key any more');
  return failed.status;
}

/**
 * Fork a task from a step: a new task whose journal is the source's up to that step (its first run
 * copies it, so no model call before it is made again), then its own prompt, model or agent. A
 * planned task's work is its subtasks: one of them is forked, not the plan.
 */
import { AgentqError } from '@agentq/contract';
import { MAX_WORKDIR_ENTRIES } from '@agentq/tools';
import { PLANNER_POOL } from '@agentq/contract';
import type { AgentQueues } from '@agentq/scheduling';
import type { TaskRecord, TaskStore, RoomLimits } from '@agentq/store';
import type { ForkInput } from './task-schemas.js';
import { Transitions } from './transitions.js';

/** Why a task cannot be forked as asked, in words that say what to do instead. */
/** A fork its source cannot give (its step's memory is gone): said to the client as a 409. */
export class ForkError extends AgentqError {
  readonly code = 'fork_refused';
  readonly retryable = false;
}

/** Why `source` cannot be forked as `input` asks, in words that say what to do instead; undefined when it can. */
/** A task's disk quota, as a fork is held to it: AGENTQ_TASK_DISK_MB, and the entries every work directory may hold. */
export function forkDiskQuota(diskMb: number): { bytes: number; entries: number } | undefined {
  return diskMb ? { bytes: diskMb * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES } : undefined;
}

export function forkRefusal(
  source: TaskRecord,
  input: Pick<ForkInput, 'fromStep'>,
  quota?: { bytes: number; entries: number },
): string | undefined {
  if (source.agent === PLANNER_POOL) {
    return `Task "${source.id}" is a planned task: its steps are its subtasks (${(source.children ?? []).join(', ') || 'none yet'}); fork one of them.`;
  }
  if (source.steps === 0)
    return `Task "${source.id}" has no completed step yet: a fork starts from one of its steps; fork it once a step has completed.`;
  if (input.fromStep > source.steps) {
    return `Task "${source.id}" has ${source.steps} completed step${source.steps === 1 ? '' : 's'}: fromStep must be 1 to ${source.steps}.`;
  }
  // A fork starts with a copy of its source's files, which must fit in the fork's own quota.
  if (quota && ((source.workdirBytes ?? 0) > quota.bytes || (source.workdirEntries ?? 0) > quota.entries)) {
    const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
    return `Task "${source.id}"'s work directory holds ${mib(source.workdirBytes ?? 0)} in ${source.workdirEntries ?? 0} entries, past a task's disk quota (${mib(quota.bytes)} and ${quota.entries} entries, AGENTQ_TASK_DISK_MB): a fork, which starts with a copy of it, would pass it. Fork a task whose files fit.`;
  }
  return undefined;
}

/** With `room`, the fork must fit in its tenant's limits (else NoRoomError). */
export async function forkTask(options: {
  store: TaskStore;
  queues: AgentQueues;
  source: TaskRecord;
  input: ForkInput;
  room?: RoomLimits;
  quota?: { bytes: number; entries: number };
}): Promise<{ id: string }> {
  const { source, input } = options;
  const refusal = forkRefusal(source, input, options.quota);
  if (refusal) throw new ForkError(refusal);
  const model = input.model ?? source.model;
  const created = await new Transitions(options.store).fork(
    source,
    {
      prompt: input.prompt ?? source.prompt,
      agent: input.agent ?? source.agent,
      priority: source.priority,
      metadata: source.metadata ?? {},
      ...(model ? { model } : {}),
      fromStep: input.fromStep,
    },
    options.room && { limits: options.room },
  );
  await options.queues.admitListed([{ id: created.id, pool: created.agent }]);
  return { id: created.id };
}

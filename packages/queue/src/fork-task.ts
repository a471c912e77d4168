/**
 * Fork a task from a step: a new task whose journal is the source's up to that step (its first run
 * copies it, so no model call before it is made again), then its own prompt, model or agent. A
 * planned task's work is its subtasks: one of them is forked, not the plan.
 */
import { AGENT_KINDS, type AgentKind } from '@agentq/contract';
import type { AgentQueues } from './agent-queues.js';
import type { TaskRecord } from './task-record.js';
import type { ForkInput } from './task-schemas.js';
import type { TaskStore } from './task-store.js';
import type { RoomLimits } from './tenant-room.js';
import { Transitions } from './transitions.js';

/** Why a task cannot be forked as asked, in words that say what to do instead. */
export class ForkError extends Error {}

/** Why `source` cannot be forked as `input` asks, in words that say what to do instead; undefined when it can. */
export function forkRefusal(source: TaskRecord, input: Pick<ForkInput, 'fromStep'>): string | undefined {
  if (!(AGENT_KINDS as readonly string[]).includes(source.agent)) {
    return `Task "${source.id}" is a planned task: its steps are its subtasks (${(source.children ?? []).join(', ') || 'none yet'}); fork one of them.`;
  }
  if (source.steps === 0) return `Task "${source.id}" has no completed step yet: a fork starts from one of its steps; fork it once a step has completed.`;
  if (input.fromStep > source.steps) {
    return `Task "${source.id}" has ${source.steps} completed step${source.steps === 1 ? '' : 's'}: fromStep must be 1 to ${source.steps}.`;
  }
  return undefined;
}

/** With `room`, the fork must fit in its tenant's limits (else NoRoomError). */
export async function forkTask(options: { store: TaskStore; queues: AgentQueues; source: TaskRecord; input: ForkInput; room?: RoomLimits }): Promise<{ id: string }> {
  const { source, input } = options;
  const refusal = forkRefusal(source, input);
  if (refusal) throw new ForkError(refusal);
  const model = input.model ?? source.model;
  const created = await new Transitions(options.store).fork(source, {
    prompt: input.prompt ?? source.prompt,
    agent: input.agent ?? (source.agent as AgentKind),
    priority: source.priority,
    metadata: source.metadata ?? {},
    ...(model ? { model } : {}),
    fromStep: input.fromStep,
  }, options.room && { limits: options.room });
  await options.queues.admission.admitListed([created.agent]);
  return { id: created.id };
}

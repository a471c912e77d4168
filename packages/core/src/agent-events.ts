/**
 * The event types of DESIGN.md, and what the loop hands its journal. The queue layer adds the
 * envelope (`id, taskId, rootId, seq, ts, agent, worker`) when it stores them.
 */

export const EVENT_TYPES = [
  'task.queued',
  'task.started',
  'plan.created',
  'subtask.queued',
  'llm.request',
  'llm.response',
  'reasoning',
  'tool.call',
  'tool.result',
  'step.completed',
  'compaction',
  'task.waiting',
  'task.completed',
  'task.failed',
  'task.cancelled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const TERMINAL_EVENT_TYPES: ReadonlySet<EventType> = new Set(['task.completed', 'task.failed', 'task.cancelled']);

export interface AgentEventInput {
  type: EventType;
  step?: number;
  data: Record<string, unknown>;
}

/**
 * The event envelope of DESIGN.md, and the `data` of each event type, typed: what a worker writes is
 * what the API streams and what the dashboard and the CLI read, checked by the compiler on both ends.
 */
import type { PlannedSubtaskView, TaskError, TaskStatus, TokenUsageView } from './tasks.js';
import type { PendingCallView } from './approvals.js';

/** Each event type and its `data`. */
export interface EventDataMap {
  /** Queued: at submission (`priority`), again after an answer, a retry, a rate limit, an outage or a hand-back. */
  /**
   * `retry`: the number of the attempt it waits for (`notBefore`: when). `rateLimited`: waiting for the
   * model's rate limit; `notBefore`: when its next call is expected to fit. `modelUnreachable`: waiting,
   * without spending an attempt, for its model endpoint to answer again (`reason` says the last error;
   * `notBefore`: when it looks again at the latest; it starts as soon as the endpoint answers).
   */
  'task.queued': {
    priority?: number;
    answer?: string;
    retry?: number;
    reason?: string;
    rateLimited?: boolean;
    modelUnreachable?: boolean;
    notBefore?: string;
    forkOf?: string;
    fromStep?: number;
    /** It names a concurrency key: it runs when the key has room. */
    concurrencyKey?: string;
    /** Every child its `delegate` call started has ended: each one's id and status. */
    children?: Array<{ id: string; status: string }>;
  };
  'task.started': { attempt: number; resumed: boolean };
  /** `given`: the plan its client gave on submit, not the planner model's. */
  'plan.created': { version: number; plan: Array<Omit<PlannedSubtaskView, 'version'>>; given?: true };
  'subtask.queued': { subtaskId: string; planId: string; agent: string };
  'llm.request': { model: string; messages: number; tools: number };
  /**
   * What a model or a tool wrote is kept up to 32 KiB characters an event (its head and tail beyond):
   * `contentLength`, `argumentsLength`, `outputLength` and `textLength` say how long the whole was when it
   * was cut. The whole is in the task's messages.
   */
  'llm.response': {
    content: string | null;
    contentLength?: number;
    toolCalls: Array<{ id: string; name: string; arguments: string; argumentsLength?: number }>;
    usage: TokenUsageView | null;
    finishReason: string | null;
    durationMs: number;
    /** What the call cost in USD (models.<model>.price, or a built-in price); absent for a model without a price. */
    costUsd?: number;
  };
  reasoning: { text: string; textLength?: number };
  'tool.call': { id: string; name: string; arguments: string; argumentsLength?: number; label?: string };
  'tool.result': {
    id: string;
    name: string;
    ok: boolean;
    skipped?: boolean;
    output: string;
    outputLength?: number;
    durationMs: number;
  };
  /** `planErrors`: why the planner's plan of this step was not accepted. */
  'step.completed': { step: number; planErrors?: string[] };
  /**
   * An MCP server of the agent marked `optional` could not start or list its tools (or the tenant lacks
   * a secret it needs): the run goes on without its tools. `reason` says why, with the end of what the
   * server wrote on stderr (at most 2,000 characters, its head and tail kept). A server
   * that is not optional fails the run's attempt instead (`task.queued` with the reason, `task.failed`).
   */
  'mcp.unavailable': { server: string; reason: string };
  compaction: { tokensBefore: number; tokensAfter: number; summarised: number; summaries: number };
  /**
   * Waiting: for its user's answer to `question`, or for a person to decide `approvals` (by
   * `expiresAt`, when the agent has a time limit).
   */
  'task.waiting': {
    question?: string;
    approvals?: Array<Omit<PendingCallView, 'decision'>>;
    expiresAt?: string;
    /** The children its `delegate` call started: it resumes once every one has ended. */
    children?: string[];
    steps: number;
  };
  /** A call waiting for approval was decided (`expired`: nobody decided in time, so it is rejected). */
  'approval.decided': { id: string; name: string; approve: boolean; reason?: string; expired?: true };
  'task.completed': TaskEnd & { result: string; steps?: number; subtasks?: number };
  'task.failed': TaskEnd & { error?: TaskError; steps?: number; skipped?: boolean; reason?: string };
  'task.cancelled': TaskEnd & { reason?: string; steps?: number };
}

/** A subtask's end, repeated in its root's stream, says which subtask (the envelope has its task id). */
export interface TaskEnd {
  subtaskId?: string;
  planId?: string;
  status?: TaskStatus;
  result?: string;
  error?: TaskError;
}

export type EventType = keyof EventDataMap;

export const TERMINAL_EVENT_TYPES: ReadonlySet<EventType> = new Set([
  'task.completed',
  'task.failed',
  'task.cancelled',
]);

/** An event as written by a part that knows its task: the store adds the rest of the envelope. */
export type EventInput = { [Type in EventType]: { type: Type; step?: number; data: EventDataMap[Type] } }[EventType];

/** An event as stored and streamed. `taskId` may be a subtask's, in its root's stream. */
export type TaskEvent = { [Type in EventType]: EventEnvelope & { type: Type; data: EventDataMap[Type] } }[EventType];

export interface EventEnvelope {
  /** `<taskId>:<seq>`. */
  id: string;
  taskId: string;
  rootId: string;
  /** From 1, one more per event of the stream, no gaps. */
  seq: number;
  ts: string;
  agent?: string;
  worker?: string;
  step?: number;
}

/**
 * A model's answer as it forms, streamed live to a task's followers and never stored: no `id` and no
 * `seq` (the stored events stay gapless, and a client that joins mid-answer gets the deltas from then
 * on). Each carries what came since the last (coalesced, about 20 a second at most): text, reasoning,
 * the names of tool calls as they begin; `restart`: the stream broke and the answer starts over.
 */
export interface LlmDelta {
  type: 'llm.delta';
  taskId: string;
  rootId: string;
  ts: string;
  step?: number;
  agent?: string;
  data: { text?: string; reasoning?: string; toolCalls?: string[]; restart?: true };
}

/** What a task's event stream carries: its stored events, and live deltas between them. */
export type StreamedEvent = TaskEvent | LlmDelta;

/** Whether a streamed event is a live delta (it has no `seq`). */
export function isLiveDelta(event: StreamedEvent): event is LlmDelta {
  return event.type === 'llm.delta';
}

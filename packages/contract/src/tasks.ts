/** What a task is, as every part sees it: its kinds, statuses, errors and view. */
import type { WebhookView } from './webhooks.js';
import type { WaitingFor } from './approvals.js';
import type { RetryPolicy } from './retry-policy.js';

/** An agent's name (the configuration file's `agents`): a task may name one, and a plan's subtasks use them. */
export type AgentKind = string;

/** A queue: the planner's, or an agent's. */
export type AgentPool = string;

/** How a model asks for tools: OpenAI tool calls, or code fences for small local models. */
export const TOOL_PROTOCOLS = ['native', 'fences'] as const;
export type ToolProtocolName = (typeof TOOL_PROTOCOLS)[number];

/** `pending`: a subtask waiting for the subtasks it needs; `skipped`: one whose needs failed. */
export const TASK_STATUSES = [
  'pending',
  'queued',
  'running',
  'waiting',
  'completed',
  'failed',
  'skipped',
  'cancelled',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** Whether each status ends a task: a status added to TASK_STATUSES is a compile error here until it says. */
const STATUS_ENDS_TASK = {
  pending: false,
  queued: false,
  running: false,
  waiting: false,
  completed: true,
  failed: true,
  skipped: true,
  cancelled: true,
} satisfies Record<TaskStatus, boolean>;
/** The statuses a task ends in (the CLI, the dashboard, the API and the store all read this one set). */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(
  TASK_STATUSES.filter((status) => STATUS_ENDS_TASK[status]),
);

/** Whether `status` (a task's, or any text a caller holds) is one a task ends in. */
export function isTerminalStatus(status: string | undefined): status is TaskStatus {
  return TERMINAL_STATUSES.has(status as TaskStatus);
}

/** Why a task failed (or was skipped): one union, so the compiler checks every place that writes one. */
export const TASK_ERROR_CODES = [
  /** It used its AGENTQ_MAX_STEPS model calls. */
  'max_steps',
  /** Its token or time budget ran out. */
  'budget',
  /** The model endpoint refused it, or something else went wrong. */
  'error',
  /** Its submission could not be stored whole (Redis away): the client submits again. */
  'enqueue_failed',
  /** The planner answered with no acceptable plan. */
  'invalid_plan',
  /** Some of its subtasks did not complete. */
  'subtasks_failed',
  /** A subtask it needs did not complete: it never ran. */
  'needs_failed',
  /** Its tenant left the configuration file (its keys removed): it did not run again. */
  'tenant_gone',
] as const;
export type TaskErrorCode = (typeof TASK_ERROR_CODES)[number];

/** An error as stored and shown: plain data. */
export interface TaskError {
  code: TaskErrorCode;
  message: string;
}

export interface TokenUsageView {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those the provider served from its cache, when it says. */
  cachedPromptTokens?: number;
}

export interface BudgetView {
  /** The limits set on submit (null: none of that kind). */
  usd: number | null;
  tokens: number | null;
  /** What the task and its subtasks spent so far. */
  spentUsd: number;
  spentTokens: number;
  /** A limit was reached: its work stopped, or stops at its next step. */
  spent: boolean;
}

export interface PlannedSubtaskView {
  id: string;
  agent: string;
  task: string;
  need: string[];
  taskId: string;
  version: number;
}

/**
 * A task as `GET /v1/tasks` lists it: its prompt, and its result, cut to their first bytes (1,024, at a
 * character); `truncated` when either was (`GET /v1/tasks/:id` has them whole).
 */
export type TaskListView = TaskView & { truncated: boolean };

/** A task as `GET /v1/tasks?fields=summary` lists it: a list's row without its result. */
export type TaskSummaryView = Omit<TaskListView, 'result'>;

export interface TaskView {
  id: string;
  /** The task this one belongs to (itself for a submitted task), and its direct parent. */
  rootId: string;
  parentId: string | null;
  /** How far below its root it is: 0 for a submitted task, 1 for its subtasks and children, and so on. */
  depth: number;
  /** Whose task it is: only this tenant's keys (and admin keys) see it. */
  tenant: string;
  /** The batch it was submitted in (`batch` of the POST), if any. */
  batch: string | null;
  status: TaskStatus;
  agent: string;
  prompt: string;
  priority: number;
  metadata: Record<string, unknown>;
  result: string | null;
  error: TaskError | null;
  /** While `waiting`: what the model asked the user. */
  question: string | null;
  /**
   * What it waits for: while `waiting`, its user's answer or approvals (with each call); while `queued`,
   * its concurrency key, when as many tasks with the key run as its limit allows. Null otherwise.
   */
  waitingFor: WaitingFor | null;
  steps: number;
  usage: TokenUsageView;
  /** What its model calls cost, in USD (0 for models without a price). */
  costUsd: number;
  /** The model it runs on (named on submit, or its first run's); null before it first ran. */
  model: string | null;
  /** A fork: the task and step it continues from (`POST /v1/tasks/:id/fork`); null otherwise. */
  forkOf: { id: string; step: number } | null;
  /** What a submitted task (with every subtask of its plan) may spend, and spent; null without a budget. */
  budget: BudgetView | null;
  /** Where its events are sent (a submitted task's, or its tenant's default); null without one. */
  webhook: WebhookView | null;
  /** The schedule that submitted it; null for a task submitted otherwise. */
  scheduleId: string | null;
  /**
   * The retry policy its submit asked for (its plan's subtasks run with it too, each held to its agent's
   * `retry.maxAttempts`); what it leaves out, and null, follow its agent's (`agents.<agent>.retry`).
   */
  retry: Partial<RetryPolicy> | null;
  /** Its concurrency key and the key's limit (at most that many of its tenant's tasks with the key run at once). */
  concurrency: { key: string; limit: number } | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** A planned task: its plan (every version), its subtasks, and how far they got. */
  plan?: PlannedSubtaskView[];
  /** Its subtasks (a plan's, with their `planId`) or the children its `delegate` calls started (`planId` ''). */
  children?: Array<{ id: string; planId: string; agent: string; status: TaskStatus }>;
  /** `done`: subtasks completed; `ended`: those that ended any way (completed, failed, skipped, cancelled). */
  progress?: { done: number; ended: number; total: number };
  /** A planned task: its own tokens and those of every subtask, and what they cost. */
  totalUsage?: TokenUsageView;
  totalCostUsd?: number;
}

/** How a worker runs a pool's process tools, as the pools page shows it. */
export type PoolIsolation =
  | { kind: 'jail'; network: 'none' | 'egress' }
  | { kind: 'none' }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'not-needed' };

/** A pool as `GET /v1/pools` shows it. */
export interface PoolView {
  name: AgentPool;
  /** What the agent is for, from the configuration file (the planner's is said here). */
  description: string;
  /** `waiting`: every task of the pool not started, `admission` of them still in their tenants' lists (fair admission). */
  counts: { waiting: number; admission: number; active: number; delayed: number; failed: number; completed: number };
  jobsPerMinute: number;
  throughput: number[];
  /** Empty for a tenant's key: only admins see which processes serve a pool. */
  workers: Array<{ id: string; host: string; pid: number; startedAt: string; lastSeen: string; concurrency: number }>;
  workersOnline: number;
  concurrency: number;
  isolation: PoolIsolation[];
}

/** A task in the overview's tables. */
export interface TaskBrief {
  id: string;
  prompt: string;
  agent: string;
  status: TaskStatus;
  durationMs: number;
  tokens: number;
}

/** What `GET /v1/overview` answers: the dashboard's landing page. */
export interface OverviewView {
  counts: Record<TaskStatus, number>;
  /** Jobs finished per minute over the last hour, every pool, oldest first; `start` is the first minute. */
  perMinute: { start: string; completed: number[]; failed: number[] };
  /** Figures of the newest ended tasks (`size` of them). */
  sample: {
    size: number;
    models: Array<{
      model: string;
      tasks: number;
      calls: number;
      promptTokens: number;
      completionTokens: number;
      costUsd: number;
      modelMsPerCall: number | null;
    }>;
    agents: Array<{ agent: string; tasks: number; failed: number; calls: number; modelMsPerCall: number | null }>;
    slowest: TaskBrief[];
    costliest: TaskBrief[];
    failures: Array<{ code: string; count: number; example: { id: string; message: string } }>;
  };
}

/** A limit a submit of one more task would pass now (`UsageView.reached`). */
export type UsageLimit = 'unfinished' | 'stored' | 'writtenBytes' | 'daily';

/** What `GET /v1/usage` answers: a tenant's usage against its limits. */
export interface UsageView {
  tenant: string;
  /** Its submitted tasks not ended yet, and all it keeps (ended ones too, until deleted or expired). */
  tasks: { unfinished: number; stored: number };
  /** What its stored tasks wrote to Redis, in bytes, as limits.mb counts it. */
  writtenBytes: number;
  /** What it spent this UTC day; null for a tenant without a daily limit (only a limited tenant's spending is counted). */
  today: { tokens: number; usd: number; resetsAt: string } | null;
  /** Its limits: null where it has none. */
  limits: {
    unfinished: number;
    stored: number;
    writtenBytes: number | null;
    daily: { tokens: number | null; usd: number | null } | null;
  };
  /** The limits it is at or past: while any is listed, a submit (retry, fork) is refused with a 429. */
  reached: UsageLimit[];
}

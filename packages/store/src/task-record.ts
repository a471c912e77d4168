/**
 * A task's record as Redis holds it (a hash of strings), parsed with zod where it is read: numbers as
 * numbers, JSON fields as what they hold, absent fields as undefined. Nothing reads a raw hash.
 */
import { z } from 'zod';
import {
  AgentqError,
  TASK_STATUSES,
  TOOL_PROTOCOLS,
  WEBHOOK_EVENT_STATUS,
  WEBHOOK_EVENTS,
  type ApprovalDecision,
  type TaskError,
  type TaskView,
  type ToolProtocolName,
  type WaitingFor,
  type WebhookEvent,
} from '@agentq/contract';
import { DEFAULT_TENANT } from './task-ids.js';

const json = <Schema extends z.ZodType>(schema: Schema) =>
  z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'is not JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);
const count = z.coerce.number().int().min(0).catch(0);
const optionalText = z
  .string()
  .optional()
  .transform((value) => value || undefined);

const taskErrorSchema = z.object({ code: z.string(), message: z.string() }).transform((error) => error as TaskError);
const pendingSchema = z.union([
  z.object({
    kind: z.literal('approval'),
    step: z.number().int(),
    calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string(), rule: z.string() })),
    expiresAt: z.string().optional(),
  }) satisfies z.ZodType<PendingApproval>,
  z.object({
    kind: z.literal('children'),
    callId: z.string(),
    protocol: z.enum(TOOL_PROTOCOLS),
    children: z.array(z.string()),
  }) satisfies z.ZodType<PendingChildren>,
  z.object({
    kind: z.literal('question').optional(),
    callId: z.string(),
    protocol: z.enum(TOOL_PROTOCOLS),
    question: z.string(),
  }) satisfies z.ZodType<PendingQuestion>,
]);
const decisionSchema = z.object({
  approve: z.boolean(),
  reason: z.string().optional(),
  expired: z.literal(true).optional(),
}) satisfies z.ZodType<ApprovalDecision>;
// Kept as [call id, decision] pairs, read into a Map: a call's id is the model's to choose, and one named
// `__proto__` or `constructor` must be a call like any other, never an object's own name.
const decisionsSchema = z
  .object({ step: z.number().int(), calls: z.array(z.tuple([z.string(), decisionSchema])) })
  .transform(({ step, calls }): StepDecisions => ({ step, calls: new Map(calls) }));
const startedCallsSchema = z.object({ step: z.number().int(), ids: z.array(z.string()) });
const plannedSubtaskSchema = z.object({
  id: z.string(),
  agent: z.string(),
  task: z.string(),
  need: z.array(z.string()),
});
const storedSubtaskSchema = plannedSubtaskSchema.extend({ taskId: z.string(), version: z.number() });

const recordSchema = z.object({
  id: z.string().min(1),
  rootId: z.string().min(1),
  parentId: optionalText,
  /** Below its root: absent for a submitted task (0) and a plan's subtask (1), written for a delegated child. */
  depth: z.coerce.number().int().min(0).optional().catch(undefined),
  /** A root: how many children `delegate` calls started in its tree (its `delegate.maxDescendants` bounds them). */
  descendants: count.default(0),
  /** Whose stored files its first run places: its root's (absent) or, a child given files of its own, its own. */
  inputsOf: optionalText,
  tenant: z.string().default(DEFAULT_TENANT),
  agent: z.string().min(1),
  prompt: z.string().default(''),
  priority: z.coerce.number().int().min(1).max(10).catch(5),
  metadata: json(z.record(z.string(), z.unknown())).optional(),
  status: z.enum(TASK_STATUSES),
  /** A submitted task (in the lists); subtasks are reached through their root. */
  listed: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  order: z.coerce.number().optional(),
  steps: count.default(0),
  promptTokens: count.default(0),
  completionTokens: count.default(0),
  createdAt: z.string().default(''),
  startedAt: optionalText,
  finishedAt: optionalText,
  /** The last event's number. */
  seq: count.default(0),
  /** The model its runs call (named on submit, or its first run's), and the time its model calls took in all (ms). */
  model: optionalText,
  /** Its model was named on submit (or its root's was): a plan's subtasks and a retry keep it. */
  pinnedModel: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  /** A fork: the task whose steps before `forkStep` it starts from. */
  forkOf: optionalText,
  forkStep: z.coerce.number().int().positive().optional(),
  /** What its work directory held when its last run ended, as `du` counts it. */
  workdirBytes: z.coerce.number().int().min(0).optional().catch(undefined),
  workdirEntries: z.coerce.number().int().min(0).optional().catch(undefined),
  modelMs: count.default(0),
  /** What its model calls cost, in micro-USD. */
  costMicroUsd: count.default(0),
  /**
   * A task with a budget (a submitted task's own, or its root's for a subtask): its spending adds up
   * at the root, in `spentTokens` and `spentMicroUsd` (the whole tree's).
   */
  budgeted: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  budgetTokens: z.coerce.number().int().positive().optional(),
  budgetMicroUsd: z.coerce.number().int().positive().optional(),
  spentTokens: count.default(0),
  spentMicroUsd: count.default(0),
  /** The batch it was submitted in, if any. */
  batch: optionalText,
  /** The schedule that submitted it. */
  scheduleId: optionalText,
  /** Its concurrency key and that key's limit (concurrency-gate.ts); `gated` while it waits in the key's queue. */
  concurrencyKey: optionalText,
  concurrencyLimit: z.coerce.number().int().positive().optional().catch(undefined),
  gated: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  /** The retry policy its submit asked for (its root's, for a subtask); absent: its agent's. */
  retryAttempts: z.coerce.number().int().positive().optional().catch(undefined),
  retryBackoff: z.coerce.number().positive().optional().catch(undefined),
  /**
   * Since when (ms since the epoch, Redis time) it has waited for its model's endpoint to answer again, in
   * the outage that began at `outageEpisode`: a wait in another outage starts afresh.
   */
  outageSince: z.coerce.number().int().positive().optional().catch(undefined),
  outageEpisode: z.coerce.number().int().positive().optional().catch(undefined),
  /** The 429s in a row its model answered it (models.<model>.outage.rateLimitedWaits bounds the free ones). */
  rateLimits: count.default(0),
  /** How many files it was given on submit (its root's, for a subtask): its first run places them. */
  inputs: count.default(0),
  /** Where its events go, and which statuses send one (`,completed,failed,`: commit.lua looks a status up in it). */
  webhookUrl: optionalText,
  webhookOn: optionalText,
  /** The W3C trace context its runs continue (with tracing on). */
  traceparent: optionalText,
  /** The run that holds the task, and its worker. */
  runToken: optionalText,
  worker: optionalText,
  result: z.string().optional(),
  error: json(taskErrorSchema).optional(),
  /** While waiting: what the model asked (and how the answer goes back), or the calls awaiting approval. */
  pending: z
    .string()
    .optional()
    .transform((text) => (text ? pendingSchema.parse(JSON.parse(text)) : undefined)),
  /** What was decided of a step's calls that needed approval (kept while that step runs). */
  decisions: z
    .string()
    .optional()
    .transform((text) => (text ? decisionsSchema.parse(JSON.parse(text)) : undefined)),
  /**
   * The approved calls of a step that began (written by the run before each runs): a run that resumes
   * that step runs none of them again.
   */
  startedCalls: z
    .string()
    .optional()
    .transform((text) => (text ? startedCallsSchema.parse(JSON.parse(text)) : undefined)),
  cancelRequested: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  /** The job that runs the task now (`<id>-r<n>` after an answer, or after a wait: due-tasks.ts). */
  jobId: optionalText,
  resumes: count.default(0),
  /** How many of its runs failed and were tried again (each try after a wait is a new job: its count is here). */
  retries: count.default(0),
  /** A planned task: every subtask of every plan version, and their ids. */
  plan: json(z.array(storedSubtaskSchema)).optional(),
  /** The plan its client gave on submit (task-schemas.ts, storedPlan), run instead of asking the planner model. */
  givenPlan: json(z.array(plannedSubtaskSchema)).optional(),
  children: json(z.array(z.string())).optional(),
  planVersion: z.coerce.number().int().default(1),
  replans: count.default(0),
  /** A subtask: its id in the plan, and the task ids it needs. */
  planId: optionalText,
  needs: json(z.array(z.string())).optional(),
});

export type TaskRecord = z.infer<typeof recordSchema>;

/** A record's fields but its result and plan (the large ones): what a task's summary is made from. */
export const SUMMARY_RECORD_FIELDS = Object.keys(recordSchema.shape).filter(
  (name) => !['result', 'plan', 'givenPlan', 'children', 'needs'].includes(name),
);
export type StoredSubtask = z.infer<typeof storedSubtaskSchema>;

class TaskRecordError extends AgentqError {
  readonly code = 'invalid_record';
  readonly retryable = false;
}

/** The record of a hash (HGETALL), or undefined when there is none. Throws on a malformed one. */
/** A record's hash from the values HMGET read of `names` (a field the record has not is left out). */
export function recordHash(names: readonly string[], values: ReadonlyArray<string | null>): Record<string, string> {
  const hash: Record<string, string> = {};
  names.forEach((name, index) => {
    const value = values[index];
    if (value !== null && value !== undefined) hash[name] = value;
  });
  return hash;
}

export function parseTaskRecord(hash: Record<string, string>): TaskRecord | undefined {
  if (!hash.id) return undefined;
  const parsed = recordSchema.safeParse(hash);
  if (!parsed.success)
    throw new TaskRecordError(
      `Task ${hash.id} has a malformed record: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** What the API shows of a record (a planned task's plan and children are added by the store). */
export function taskView(record: TaskRecord): TaskView {
  return {
    id: record.id,
    rootId: record.rootId,
    parentId: record.parentId ?? null,
    depth: depthOf(record),
    tenant: record.tenant,
    batch: record.batch ?? null,
    status: record.status,
    agent: record.agent,
    prompt: record.prompt,
    priority: record.priority,
    metadata: record.metadata ?? {},
    result: record.result ?? null,
    error: record.error ?? null,
    question: record.status === 'waiting' && isQuestion(record.pending) ? record.pending.question : null,
    waitingFor: waitingFor(record),
    steps: record.steps,
    usage: { promptTokens: record.promptTokens, completionTokens: record.completionTokens },
    costUsd: record.costMicroUsd / 1_000_000,
    model: record.model ?? null,
    forkOf: record.forkOf && record.forkStep ? { id: record.forkOf, step: record.forkStep } : null,
    budget: budgetView(record),
    webhook: webhookView(record),
    scheduleId: record.scheduleId ?? null,
    retry:
      record.retryAttempts !== undefined || record.retryBackoff !== undefined
        ? {
            ...(record.retryAttempts !== undefined ? { attempts: record.retryAttempts } : {}),
            ...(record.retryBackoff !== undefined ? { backoff: record.retryBackoff } : {}),
          }
        : null,
    concurrency:
      record.concurrencyKey !== undefined ? { key: record.concurrencyKey, limit: record.concurrencyLimit ?? 1 } : null,
    createdAt: record.createdAt,
    startedAt: record.startedAt ?? null,
    finishedAt: record.finishedAt ?? null,
  };
}

/** How far below its root a task is. */
export function depthOf(record: Pick<TaskRecord, 'depth' | 'parentId'>): number {
  return record.depth ?? (record.parentId ? 1 : 0);
}

/** A waiting task's pending interrupt, by kind (a question stored before kinds were written has none). */
export type Pending = PendingQuestion | PendingApproval | PendingChildren;
type PendingKind = NonNullable<Pending['kind']>;

export function isQuestion(pending: Pending | undefined): pending is PendingQuestion {
  return pending !== undefined && (pending.kind ?? 'question') === 'question';
}

/**
 * What each kind of interrupt shows as the task's `waitingFor`: a kind added to Pending is a compile
 * error here until it says how it is shown.
 */
const WAITING_FOR: {
  [Kind in PendingKind]: (record: TaskRecord, pending: Extract<Pending, { kind?: Kind }>) => WaitingFor;
} = {
  question: (_record, pending) => ({ kind: 'answer', question: pending.question }),
  approval: (record, pending) => {
    const decided = decisionsOf(record, pending);
    return {
      kind: 'approval',
      calls: pending.calls.map((call) => ({ ...call, decision: decided.get(call.id) ?? null })),
      expiresAt: pending.expiresAt ?? null,
    };
  },
  // Which have not ended is read by the task's own view (task-store.ts); until then, all of them.
  children: (_record, pending) => ({ kind: 'children', children: pending.children, running: pending.children }),
};

/** What a waiting task waits for, with each awaited call's decision so far. */
function waitingFor(record: TaskRecord): WaitingFor | null {
  if (record.status === 'queued' && record.gated && record.concurrencyKey !== undefined)
    return { kind: 'concurrency', key: record.concurrencyKey, limit: record.concurrencyLimit ?? 1 };
  const pending = record.status === 'waiting' ? record.pending : undefined;
  if (!pending) return null;
  const show = WAITING_FOR[pending.kind ?? 'question'] as (record: TaskRecord, pending: Pending) => WaitingFor;
  return show(record, pending);
}

/** Where a task's events go, as its view shows it; null without a webhook. */
function webhookView(record: TaskRecord): TaskView['webhook'] {
  return record.webhookUrl ? { url: record.webhookUrl, events: webhookEventsOf(record) } : null;
}

/** The events a task's webhook is sent. */
export function webhookEventsOf(record: Pick<TaskRecord, 'webhookOn'>): WebhookEvent[] {
  const statuses = (record.webhookOn ?? '').split(',');
  return WEBHOOK_EVENTS.filter((event) => statuses.includes(WEBHOOK_EVENT_STATUS[event]));
}

/** The record field that says which statuses send an event: each between commas, as commit.lua looks them up. */
export function webhookOnField(events: readonly WebhookEvent[]): string {
  return `,${events.map((event) => WEBHOOK_EVENT_STATUS[event]).join(',')},`;
}

/** A submitted task's budget and what its tree spent of it; null without one (and for subtasks). */
function budgetView(record: TaskRecord): TaskView['budget'] {
  if (record.budgetTokens === undefined && record.budgetMicroUsd === undefined) return null;
  return {
    usd: record.budgetMicroUsd === undefined ? null : record.budgetMicroUsd / 1_000_000,
    tokens: record.budgetTokens ?? null,
    spentUsd: record.spentMicroUsd / 1_000_000,
    spentTokens: record.spentTokens,
    spent: budgetSpent(record),
  };
}

/** Whether a root's budget is spent (its tree's spending reached a limit). */
export function budgetSpent(record: TaskRecord): boolean {
  return (
    (record.budgetTokens !== undefined && record.spentTokens >= record.budgetTokens) ||
    (record.budgetMicroUsd !== undefined && record.spentMicroUsd >= record.budgetMicroUsd)
  );
}

/** What a waiting task waits for: the call that asked, and how the answer must be written back. */
export interface PendingQuestion {
  kind?: 'question';
  callId: string;
  protocol: ToolProtocolName;
  question: string;
}

/** A waiting task's calls of step `step` that wait for a person's approval, and until when (if limited). */
export interface PendingApproval {
  kind: 'approval';
  step: number;
  calls: Array<{ id: string; name: string; arguments: string; rule: string }>;
  expiresAt?: string;
}

/** A waiting task's `delegate` call and the children it started: the call is answered once all have ended. */
export interface PendingChildren {
  kind: 'children';
  callId: string;
  protocol: ToolProtocolName;
  children: string[];
}

/** What was decided of step `step`'s calls, by call id. */
export interface StepDecisions {
  step: number;
  calls: ReadonlyMap<string, ApprovalDecision>;
}

/** What was decided so far of the calls a task waits for (none of another step's). */
export function decisionsOf(record: TaskRecord, pending: PendingApproval): ReadonlyMap<string, ApprovalDecision> {
  return record.decisions?.step === pending.step ? record.decisions.calls : new Map();
}

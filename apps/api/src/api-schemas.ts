/**
 * What the API answers, as zod schemas, for its OpenAPI document (openapi.ts). The contract's types
 * (TaskView, PoolView, TaskEvent...) are what the routes send; each schema here is checked against its
 * type by the compiler, both ways (`Same` below), so the document cannot drift from the code.
 */
import { z } from 'zod';
import {
  TASK_ERROR_CODES,
  TASK_STATUSES,
  WEBHOOK_EVENTS,
  type DeliveryView,
  type SchedulePageView,
  type ScheduleView,
  type EventType,
  type OverviewView,
  type PoolView,
  type TaskEvent,
  type TaskSummaryView,
  type TaskView,
  type UsageView,
  type WaitingFor,
  type WebhookSecretView,
} from '@agentq/contract';
import { API_ERROR_CODES } from './api-error.js';

/** True when A and B describe the same values. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
function sameType<A, B>(same: Same<A, B>): void {
  void same;
}

const status = z.enum(TASK_STATUSES);
const usage = z.object({
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  cachedPromptTokens: z.number().int().optional(),
});

export const errorBodySchema = z
  .object({
    error: z.object({
      code: z.enum(API_ERROR_CODES),
      message: z.string().meta({ description: 'What went wrong and what to do about it.' }),
      details: z.unknown().optional().meta({ description: 'For invalid_request: each bad field, with its path.' }),
    }),
  })
  .meta({ id: 'Error' });

const webhookViewSchema = z.object({ url: z.string(), events: z.array(z.enum(WEBHOOK_EVENTS)) });

export const deliverySchema = z
  .object({
    id: z.string().meta({ description: 'The `webhook-id` header of every attempt: a receiver drops a repeat by it.' }),
    event: z.enum(WEBHOOK_EVENTS),
    url: z.string(),
    state: z.enum(['pending', 'delivered', 'failed']),
    createdAt: z.string(),
    nextAttemptAt: z.string().nullable(),
    attempts: z.array(
      z.object({
        at: z.string(),
        statusCode: z.number().int().nullable().meta({ description: "The receiver's status; null when none came." }),
        error: z.string().nullable(),
        durationMs: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'Delivery' });
sameType<z.infer<typeof deliverySchema>, DeliveryView>(true);

export const scheduleViewSchema = z
  .object({
    id: z.string(),
    tenant: z.string(),
    cron: z.string().nullable(),
    timezone: z.string().nullable(),
    every: z.number().int().nullable(),
    overlap: z.enum(['skip', 'allow']),
    paused: z.boolean(),
    pausedReason: z.string().nullable().meta({
      description:
        'Why agentq paused it: its tenant is no longer in the configuration file (it stays paused until resumed). Null otherwise.',
    }),
    task: z.record(z.string(), z.unknown()).meta({
      description:
        'The task each run submits, as `POST /v1/tasks` takes it, but its `files` as `[{path, size}]`: their contents are given to each run, never served back.',
    }),
    createdAt: z.string(),
    nextRunAt: z.string().nullable(),
    lastRuns: z
      .array(z.object({ at: z.string(), taskId: z.string().nullable(), skipped: z.string().nullable() }))
      .meta({ description: 'Its last 20 runs, newest first: the task each submitted, or why it skipped.' }),
  })
  .meta({ id: 'Schedule' });
sameType<z.infer<typeof scheduleViewSchema>, ScheduleView>(true);
export const schedulePageSchema = z.object({
  schedules: z.array(scheduleViewSchema),
  nextCursor: z
    .string()
    .nullable()
    .meta({ description: 'Pass it back as `cursor` for the next page; null on the last.' }),
});
sameType<z.infer<typeof schedulePageSchema>, SchedulePageView>(true);

const decisionSchema = z.object({
  approve: z.boolean(),
  reason: z.string().optional(),
  expired: z.literal(true).optional().meta({ description: 'Rejected because nobody decided in time.' }),
});

export const waitingForSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('answer'), question: z.string() }),
    z.object({
      kind: z.literal('approval'),
      calls: z.array(
        z.object({
          id: z.string().meta({ description: 'The call, as `POST /v1/tasks/{id}/approvals` names it.' }),
          name: z.string(),
          arguments: z.string().meta({ description: 'As the model wrote them (JSON text).' }),
          rule: z.string().meta({ description: 'Which rule asks for approval, in words.' }),
          decision: decisionSchema.nullable(),
        }),
      ),
      expiresAt: z
        .string()
        .nullable()
        .meta({ description: 'When the calls not decided yet are rejected (the agent’s time limit).' }),
    }),
    z.object({ kind: z.literal('concurrency'), key: z.string(), limit: z.number().int() }),
    z.object({
      kind: z.literal('children'),
      children: z.array(z.string()).meta({ description: 'The child tasks its `delegate` call started.' }),
      running: z.array(z.string()).meta({
        description: 'Those that have not ended (a task’s own view; a list’s row says all of them).',
      }),
    }),
  ])
  .meta({ id: 'WaitingFor' });
sameType<z.infer<typeof waitingForSchema>, WaitingFor>(true);

export const taskViewSchema = z
  .object({
    id: z.string(),
    rootId: z.string(),
    parentId: z.string().nullable(),
    depth: z
      .number()
      .int()
      .meta({ description: 'How far below its root: 0 submitted, 1 a subtask or child, and so on.' }),
    tenant: z.string(),
    batch: z.string().nullable(),
    status,
    agent: z.string(),
    prompt: z.string(),
    priority: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    result: z.string().nullable(),
    error: z.object({ code: z.enum(TASK_ERROR_CODES), message: z.string() }).nullable(),
    question: z.string().nullable().meta({ description: 'While waiting: what the model asked the user.' }),
    waitingFor: waitingForSchema.nullable().meta({
      description:
        'What it waits for: while waiting, its user’s answer, approvals of its calls or the children its `delegate` call started; while queued, room under its concurrency key. Null otherwise.',
    }),
    steps: z.number().int(),
    usage,
    costUsd: z.number().meta({
      description:
        'What its model calls cost, in USD (models.<model>.price in the configuration file, or a built-in price; 0 for models without a price).',
    }),
    model: z
      .string()
      .nullable()
      .meta({ description: 'The model it runs on (named on submit, or its first run’s); null before it first ran.' }),
    forkOf: z
      .object({ id: z.string(), step: z.number().int() })
      .nullable()
      .meta({ description: 'A fork: the task and step it continues from.' }),
    budget: z
      .object({
        usd: z.number().nullable(),
        tokens: z.number().int().nullable(),
        spentUsd: z.number(),
        spentTokens: z.number().int(),
        spent: z.boolean(),
      })
      .nullable()
      .meta({
        description:
          'What the task, with every subtask of its plan, may spend (set on submit) and spent; null without a budget.',
      }),
    webhook: webhookViewSchema
      .nullable()
      .meta({ description: "Where its events are sent (its submit's, or its tenant's default); null without one." }),
    scheduleId: z.string().nullable().meta({ description: 'The schedule that submitted it; null otherwise.' }),
    retry: z.object({ attempts: z.number().int().optional(), backoff: z.number().optional() }).nullable().meta({
      description:
        'The retry policy its submit asked for (attempts in all; seconds before the second, doubling); what it leaves out, and null, follow its agent’s (`agents.<agent>.retry`).',
    }),
    concurrency: z
      .object({ key: z.string(), limit: z.number().int() })
      .nullable()
      .meta({ description: 'Its concurrency key, and how many of its tenant’s tasks with it may run at once.' }),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    plan: z
      .array(
        z.object({
          id: z.string(),
          agent: z.string(),
          task: z.string(),
          need: z.array(z.string()),
          taskId: z.string(),
          version: z.number().int(),
        }),
      )
      .optional(),
    children: z.array(z.object({ id: z.string(), planId: z.string(), agent: z.string(), status })).optional(),
    progress: z.object({ done: z.number().int(), ended: z.number().int(), total: z.number().int() }).optional(),
    totalUsage: usage.optional(),
    totalCostUsd: z.number().optional(),
  })
  .meta({ id: 'Task' });
sameType<z.infer<typeof taskViewSchema>, TaskView>(true);

const EVENT_TYPES = [
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
  'mcp.unavailable',
  'compaction',
  'task.waiting',
  'approval.decided',
  'task.completed',
  'task.failed',
  'task.cancelled',
] as const;
sameType<(typeof EVENT_TYPES)[number], EventType>(true);

export const taskEventSchema = z
  .object({
    id: z.string().meta({ description: '`<taskId>:<seq>`' }),
    taskId: z.string().meta({ description: "A subtask's id, for a subtask's end repeated in its root's stream." }),
    rootId: z.string(),
    seq: z.number().int().meta({ description: 'From 1, one more per event of the stream, no gaps.' }),
    ts: z.string(),
    type: z.enum(EVENT_TYPES),
    agent: z.string().optional(),
    worker: z.string().optional(),
    step: z.number().int().optional(),
    data: z.record(z.string(), z.unknown()).meta({ description: "The type's data (packages/contract/src/events.ts)." }),
  })
  .meta({ id: 'TaskEvent' });
sameType<Omit<z.infer<typeof taskEventSchema>, 'data' | 'type'>, Omit<TaskEvent, 'data' | 'type'>>(true);

const isolation = z.union([
  z.object({ kind: z.literal('jail'), network: z.enum(['none', 'egress']) }),
  z.object({ kind: z.literal('none') }),
  z.object({ kind: z.literal('unavailable'), reason: z.string() }),
  z.object({ kind: z.literal('not-needed') }),
]);

export const poolViewSchema = z
  .object({
    name: z.string().meta({ description: 'The planner, or an agent of the configuration file.' }),
    description: z.string(),
    counts: z.object({
      waiting: z.number().int().meta({
        description: 'Tasks of the pool not started: in its queue, or still waiting for their tenant’s turn.',
      }),
      admission: z.number().int().meta({
        description: 'Of those, the ones still in their tenants’ lists (fair admission, AGENTQ_FAIR_BACKLOG).',
      }),
      active: z.number().int(),
      delayed: z.number().int().meta({
        description:
          'Tasks waiting out a delay (a model outage, a retry’s backoff, a shared limit) before they go back through admission.',
      }),
      failed: z.number().int(),
      completed: z.number().int(),
    }),
    jobsPerMinute: z.number().int(),
    throughput: z
      .array(z.number().int())
      .meta({ description: 'Jobs finished in each of the last 15 minutes, oldest first.' }),
    workers: z.array(
      z.object({
        id: z.string(),
        host: z.string(),
        pid: z.number().int(),
        startedAt: z.string(),
        lastSeen: z.string(),
        concurrency: z.number().int(),
      }),
    ),
    workersOnline: z.number().int(),
    concurrency: z.number().int(),
    isolation: z.array(isolation),
  })
  .meta({ id: 'Pool' });
sameType<z.infer<typeof poolViewSchema>, PoolView>(true);

export const submittedSchema = z.object({
  batch: z.string().optional().meta({ description: 'The batch of the request, when it named one.' }),
  tasks: z.array(
    z.object({
      id: z.string(),
      status,
      existing: z
        .literal(true)
        .optional()
        .meta({ description: 'The task an idempotency key named already, made from the same body.' }),
    }),
  ),
});
export const taskListSchema = z.object({
  tasks: z.array(
    taskViewSchema
      .extend({
        prompt: z.string().meta({
          description: 'Its first 1,024 bytes (UTF-8, cut at a character): `GET /v1/tasks/{id}` has the whole prompt.',
        }),
        result: taskViewSchema.shape.result
          .optional()
          .meta({ description: 'Its first 1,024 bytes, as the prompt; left out with `fields=summary`.' }),
        truncated: z.boolean().meta({ description: 'Its prompt or result was cut.' }),
      })
      .meta({ id: 'TaskListItem' }),
  ),
  nextCursor: z
    .string()
    .nullable()
    .meta({ description: 'The next page (a page also ends early, before 4 MiB of JSON); null on the last.' }),
});
sameType<Omit<z.infer<typeof taskListSchema>['tasks'][number], 'result'>, TaskSummaryView>(true);
export const statusListSchema = z.object({ tasks: z.array(z.object({ id: z.string(), status: status.nullable() })) });
export const taskActionSchema = z.object({
  id: z.string(),
  status,
  retryOf: z.string().optional(),
  forkOf: z.object({ id: z.string(), step: z.number().int() }).optional(),
});
export const poolListSchema = z.object({ pools: z.array(poolViewSchema), workers: z.number().int() });
export const bulkResultSchema = z.object({
  action: z.enum(['cancel', 'retry', 'delete']),
  matched: z
    .number()
    .int()
    .meta({ description: 'Tasks the filter matched that the action applies to (at most 10,000).' }),
  changed: z.number().int().meta({
    description:
      'Cancelled (or asked to stop), retried as new tasks, or deleted with their subtasks (a task with a subtask not ended yet is left).',
  }),
  more: z.boolean().meta({ description: 'More tasks match: send the same request again.' }),
});
const brief = z.object({
  id: z.string(),
  prompt: z.string(),
  agent: z.string(),
  status,
  durationMs: z.number(),
  tokens: z.number().int(),
});
export const overviewSchema = z
  .object({
    counts: z.record(status, z.number().int()),
    perMinute: z
      .object({ start: z.string(), completed: z.array(z.number().int()), failed: z.array(z.number().int()) })
      .meta({ description: 'Jobs finished per minute over the last hour, every pool, oldest first.' }),
    sample: z
      .object({
        size: z.number().int(),
        models: z.array(
          z.object({
            model: z.string(),
            tasks: z.number().int(),
            calls: z.number().int(),
            promptTokens: z.number().int(),
            completionTokens: z.number().int(),
            costUsd: z.number(),
            modelMsPerCall: z.number().nullable(),
          }),
        ),
        agents: z.array(
          z.object({
            agent: z.string(),
            tasks: z.number().int(),
            failed: z.number().int(),
            calls: z.number().int(),
            modelMsPerCall: z.number().nullable(),
          }),
        ),
        slowest: z.array(brief),
        costliest: z.array(brief),
        failures: z.array(
          z.object({
            code: z.string(),
            count: z.number().int(),
            example: z.object({ id: z.string(), message: z.string() }),
          }),
        ),
      })
      .meta({ description: 'Figures of the newest ended tasks (at most 200).' }),
  })
  .meta({ id: 'Overview' });
sameType<z.infer<typeof overviewSchema>, OverviewView>(true);

export const principalSchema = z.object({ tenant: z.string(), admin: z.boolean() });

export const webhookSecretSchema = z
  .object({
    tenant: z.string(),
    secret: z.string().meta({
      description:
        "The tenant's signing key, `whsec_` and base64, as any Standard Webhooks library takes it: no other tenant's deliveries verify with it.",
    }),
  })
  .meta({ id: 'WebhookSecret' });
sameType<z.infer<typeof webhookSecretSchema>, WebhookSecretView>(true);

export const usageSchema = z
  .object({
    tenant: z.string(),
    tasks: z.object({
      unfinished: z.number().int().meta({ description: 'Its submitted tasks not ended yet (limits.unfinished).' }),
      stored: z.number().int().meta({
        description: 'Its submitted tasks kept, ended ones too, until deleted or past their retention (limits.stored).',
      }),
    }),
    writtenBytes: z.number().int().meta({
      description: 'What its stored tasks wrote to Redis, in bytes (limits.mb); a DELETE gives it back.',
    }),
    today: z
      .object({
        tokens: z.number().int(),
        usd: z.number(),
        resetsAt: z.string().meta({ description: 'Midnight UTC, when the day’s spending starts again from zero.' }),
      })
      .nullable()
      .meta({
        description:
          'What it spent this UTC day; null for a tenant without a daily limit (limits.tokensPerDay/usdPerDay): only a limited tenant’s spending is counted.',
      }),
    limits: z.object({
      unfinished: z.number().int(),
      stored: z.number().int(),
      writtenBytes: z.number().int().nullable(),
      daily: z.object({ tokens: z.number().int().nullable(), usd: z.number().nullable() }).nullable(),
    }),
    reached: z.array(z.enum(['unfinished', 'stored', 'writtenBytes', 'daily'])).meta({
      description: 'The limits it is at or past: while any is listed, a submit, retry or fork is refused with a 429.',
    }),
  })
  .meta({ id: 'Usage' });
sameType<z.infer<typeof usageSchema>, UsageView>(true);
export const tenantListSchema = z.object({
  tenants: z.array(usageSchema).meta({ description: '`default`, then every tenant the API keys name.' }),
});

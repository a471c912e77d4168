/** Submit, read, list and cancel tasks. */
import {
  AGENT_NAME,
  PLANNER_POOL,
  RETRY_LIMITS,
  TASK_STATUSES,
  TERMINAL_STATUSES,
  type TaskStatus,
} from '@agentq/contract';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { isTaskId, type TaskRecord, type TaskStore } from '@agentq/store';
import {
  fieldsOnly,
  forkSchema,
  RETRYABLE,
  type BulkTask,
  type SubmittedTask,
  type TaskInput,
  type TaskService,
} from '@agentq/tasks';
import { SpanKind, trace, type Span } from '@opentelemetry/api';
import type { Metrics, Tracing } from '@agentq/telemetry';
import { canSee, principalOf, type Principal } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { invalid, parsedQuery } from '../request-input.js';
import { answerSchema, approvalSchema, batchSchema, statusesSchema, submitSchema } from '../request-schemas.js';
import type { WebhookRules } from '../webhook-rules.js';
import { SEARCHES_RUNNING, SearchTurns } from '../search-turns.js';

/** At most this many tasks per bulk action (a client asks again for the rest: `more`). */
const BULK_LIMIT = 10_000;
/** What a cancel applies to: every task not ended yet. */
const CANCELLABLE: ReadonlySet<TaskStatus> = new Set(TASK_STATUSES.filter((status) => !TERMINAL_STATUSES.has(status)));
/** The statuses each bulk action applies to, and its past participle for messages. */
const BULK_ACTIONS = {
  cancel: { wanted: CANCELLABLE, verb: 'cancelled' },
  retry: { wanted: RETRYABLE, verb: 'retried' },
  delete: { wanted: TERMINAL_STATUSES, verb: 'deleted' },
} satisfies Record<string, { wanted: ReadonlySet<TaskStatus>; verb: string }>;

export const bulkSchema = fieldsOnly({
  action: z.enum(['cancel', 'retry', 'delete']),
  batch: batchSchema.optional(),
  status: z.enum(TASK_STATUSES).optional(),
}).refine((body) => body.batch !== undefined || body.status !== undefined, {
  message: 'name a batch or a status (or both): a bulk action never applies to every task at once',
});

// Strict: a misspelt filter (`?stauts=failed`) would otherwise list every task.
export const listQuerySchema = fieldsOnly(
  {
    batch: batchSchema.optional(),
    status: z.enum(TASK_STATUSES).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
    cursor: z.string().regex(/^\d+$/, 'must be a nextCursor from a previous page').optional(),
    q: z.string().trim().min(1).max(200).optional().meta({
      description:
        'Only tasks whose whole prompt holds this text (ASCII letters in any case). A page of a search reads at most 4 MiB of prompts, then ends with its `nextCursor`: it may hold fewer matches than `limit`, or none, with more to come.',
    }),
    fields: z.enum(['summary']).optional().meta({
      description:
        '`summary`: each task without its `result` (what a list shown on a screen needs; a result may be megabytes).',
    }),
  },
  '',
  'parameter',
);

/** What a submit is checked against: the schema, and what this install allows (models, agents, plans, webhooks, files). */
export function submitBodyFor(options: SubmitRules) {
  // A model a task names must be one this install allows: said like any other bad field.
  const allowModel = (model: string | undefined, path: Array<string | number>, context: z.RefinementCtx) => {
    if (model !== undefined && !options.allowedModels.has(model))
      context.addIssue({ code: 'custom', path, message: modelNotAllowed(model, options.allowedModels) });
  };
  // An agent a task names must be one the configuration file declares.
  const allowAgent = (agent: string | undefined, path: Array<string | number>, context: z.RefinementCtx) => {
    // A name that is not a name at all is the schema's to refuse.
    if (agent !== undefined && AGENT_NAME.test(agent) && !options.agents.includes(agent))
      context.addIssue({
        code: 'custom',
        path,
        message: `"${agent}" is not an agent of this install; agents: ${options.agents.map((name) => `"${name}"`).join(', ')}`,
      });
  };
  // A plan given on submit is held to the operator's bound on a plan, as the planner model's are.
  const planFits = (plan: TaskInput['plan'], path: Array<string | number>, context: z.RefinementCtx) => {
    if (plan && plan.length > options.maxSubtasks)
      context.addIssue({
        code: 'custom',
        path,
        message: `has ${plan.length} subtasks; at most ${options.maxSubtasks} are allowed here (AGENTQ_MAX_SUBTASKS): merge some`,
      });
  };
  // Each agent a body names, said with the body's other problems (the names are the configuration's,
  // so not in the schema): run on the raw body even when other fields failed.
  const agentsNamed = (body: unknown, context: z.RefinementCtx) => {
    const tasks = (body as { tasks?: unknown } | undefined)?.tasks;
    if (!Array.isArray(tasks)) return;
    tasks.forEach((task: { agent?: unknown; plan?: unknown } | undefined, index) => {
      if (typeof task?.agent === 'string') allowAgent(task.agent, ['tasks', index, 'agent'], context);
      if (Array.isArray(task?.plan))
        task.plan.forEach((subtask: { agent?: unknown } | undefined, step) => {
          if (typeof subtask?.agent === 'string')
            allowAgent(subtask.agent, ['tasks', index, 'plan', step, 'agent'], context);
        });
    });
  };
  const submitBody = submitSchema
    .superRefine((body, context) =>
      body.tasks.forEach((task, index) => {
        allowModel(task.model, ['tasks', index, 'model'], context);
        planFits(task.plan, ['tasks', index, 'plan'], context);
        const given = task.files?.reduce((sum, file) => sum + file.content.length, 0) ?? 0;
        if (options.diskQuota && given > options.diskQuota.bytes)
          context.addIssue({
            code: 'custom',
            path: ['tasks', index, 'files'],
            message: `hold ${given} bytes, more than a task's folder may (AGENTQ_TASK_DISK_MB: ${options.diskQuota.bytes} bytes)`,
          });
        // A task is tried at most as often as its agent allows (the planner's, for a planned task).
        const pool = task.agent ?? PLANNER_POOL;
        const most = options.maxAttemptsOf?.(pool) ?? RETRY_LIMITS.maxAttempts;
        if (task.retry?.attempts !== undefined && task.retry.attempts > most)
          context.addIssue({
            code: 'custom',
            path: ['tasks', index, 'retry', 'attempts'],
            message: `must be at most ${most}, the most ${pool === PLANNER_POOL ? 'the planner' : `agent "${pool}"`} allows (${pool === PLANNER_POOL ? 'planner' : `agents.${pool}`}.retry.maxAttempts)`,
          });
        const refused = task.webhook && options.webhooks.refusal(task.webhook.url);
        if (refused) context.addIssue({ code: 'custom', path: ['tasks', index, 'webhook', 'url'], message: refused });
      }),
    )
    .superRefine(agentsNamed, { when: () => true });
  return { submitBody, allowModel, allowAgent };
}

/** What this install allows a submitted task to name. */
export interface SubmitRules {
  allowedModels: ReadonlySet<string>;
  /** The agents of the configuration file: a task, a fork or a given plan's subtask may name one. */
  agents: readonly string[];
  /** The most subtasks a plan given on submit may have (AGENTQ_MAX_SUBTASKS). */
  maxSubtasks: number;
  /** Where webhooks may go (whether a tenant's can be signed is the task service's to say). */
  webhooks: WebhookRules;
  /** A task's disk quota (AGENTQ_TASK_DISK_MB): the files given on submit must fit in it. */
  diskQuota?: { bytes: number; entries: number };
  /** The most attempts a submit may ask for in a pool (its `retry.maxAttempts`). Default RETRY_LIMITS.maxAttempts. */
  maxAttemptsOf?: (pool: string) => number;
}

export function tasksRouter(
  options: SubmitRules & {
    store: TaskStore;
    tasks: TaskService;
    metrics: Metrics;
    tracing: Tracing;
  },
): Router {
  const { store, tasks: service } = options;
  const router = Router();
  const { submitBody, allowModel, allowAgent } = submitBodyFor(options);
  // A tenant's searches take turns in this process, and hold leases over every API process.
  const searchTurns = new SearchTurns({
    lease: (tenant) => store.takeSearchLease(tenant, SEARCHES_RUNNING),
  });
  const forkBody = forkSchema.superRefine((body, context) => {
    allowModel(body.model, ['model'], context);
    allowAgent(body.agent, ['agent'], context);
  });

  router.post('/v1/tasks', async (request, response) => {
    const parsed = submitBody.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const tenant = principalOf(response).tenant;
    // Its size as sent (what storing it adds to Redis, about), else its prompts'.
    const bytes =
      Number(request.headers['content-length']) || parsed.data.tasks.reduce((sum, task) => sum + task.prompt.length, 0);
    const spans = submitSpans(options.tracing, parsed.data.tasks);
    let tasks: SubmittedTask[] = [];
    try {
      tasks = await service.submit({
        tenant,
        inputs: parsed.data.tasks,
        batch: parsed.data.batch,
        bytes,
        traceparents: spans?.map((span) => options.tracing.traceparent(span)),
      });
    } finally {
      spans?.forEach((span, index) => {
        if (tasks[index]) span.setAttribute('agentq.task.id', tasks[index].id);
        span.end();
      });
    }
    const perAgent = new Map<string, number>();
    for (const task of tasks)
      if (task.existing === undefined) perAgent.set(task.agent, (perAgent.get(task.agent) ?? 0) + 1);
    for (const [agent, count] of perAgent) options.metrics.tasksSubmitted.inc({ agent }, count);
    response.status(202).json({
      ...(parsed.data.batch !== undefined ? { batch: parsed.data.batch } : {}),
      tasks: tasks.map((task) =>
        task.existing === undefined
          ? { id: task.id, status: 'queued' }
          : { id: task.id, status: task.existing, existing: true },
      ),
    });
  });

  router.get('/v1/tasks', async (request, response) => {
    const query = parsedQuery(listQuerySchema, request);
    const principal = principalOf(response);
    const { fields, ...filters } = query;
    const list = () => store.list({ ...filters, ...scopeOf(principal, query.batch), summary: fields === 'summary' });
    if (query.q === undefined) {
      response.json(await list());
      return;
    }
    // A search reads prompts in Redis: a tenant's take turns (search-turns.ts), and one whose client
    // left while it waited is not run.
    const gone = new AbortController();
    response.on('close', () => gone.abort());
    const page = await searchTurns.run(principal.tenant, list, gone.signal);
    if (page) response.json(page);
  });

  // One action on every task a filter matches: cancel (those not ended yet), retry (failed or cancelled
  // ones) or delete (ended ones, with their subtasks; a subtask is deleted with its task, never alone).
  router.post('/v1/tasks/bulk', async (request, response) => {
    const parsed = bulkSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const { action, batch, status } = parsed.data;
    const principal = principalOf(response);
    const { wanted, verb } = BULK_ACTIONS[action];
    if (status && !wanted.has(status))
      throw new ApiError(
        'invalid_request',
        `Only ${[...wanted].join(', ')} tasks can be ${verb}; got status ${status}.`,
      );
    const matched: BulkTask[] = [];
    let cursor: string | undefined;
    // A retry retries each line of work once: its newest attempt. A task some task retried already (its
    // `retryOf`) is left, whatever that retry's status; retries are newer than what they retry, and the
    // list comes newest first, so every task's retries are read before it (all statuses, for that).
    const retried = new Set<string>();
    const listed = action === 'retry' ? undefined : status;
    do {
      const page = await store.list({
        limit: 500,
        ...(listed ? { status: listed } : {}),
        ...(cursor ? { cursor } : {}),
        ...(batch !== undefined ? { batch } : {}),
        ...scopeOf(principal, batch),
        summary: true,
      });
      for (const task of page.tasks) {
        if (
          wanted.has(task.status) &&
          (!status || task.status === status) &&
          (action !== 'delete' || !task.parentId) &&
          !retried.has(task.id)
        )
          matched.push(task);
        const retryOf = task.metadata?.retryOf;
        if (typeof retryOf === 'string') retried.add(retryOf);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor && matched.length < BULK_LIMIT);
    const tasks = matched.slice(0, BULK_LIMIT);
    // Each retry is a new task of its tenant's (an admin's bulk action may span tenants), admitted whole per tenant.
    const changed =
      action === 'delete'
        ? await service.deleteMany(tasks.map((task) => task.id))
        : action === 'cancel'
          ? await service.cancelMany(tasks.map((task) => task.id))
          : await service.retryMany(tasks);
    response
      .status(202)
      .json({ action, matched: tasks.length, changed, more: matched.length > BULK_LIMIT || cursor !== undefined });
  });

  // Many statuses in one call, for clients that watch a batch (the CLI's progress bar).
  router.post('/v1/tasks/statuses', async (request, response) => {
    const parsed = statusesSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    response.json({ tasks: await store.statuses(parsed.data.ids, principalOf(response)) });
  });

  router.get('/v1/tasks/:id', async (request, response) => {
    const task = await store.get(taskIdOf(request));
    if (!task || !canSee(principalOf(response), task)) throw notFound(taskIdOf(request));
    response.json(task);
  });

  router.post('/v1/tasks/:id/cancel', async (request, response) => {
    await visibleRecord(store, principalOf(response), taskIdOf(request));
    const result = await service.cancel(taskIdOf(request));
    if (!result.found) throw notFound(taskIdOf(request));
    response.status(202).json({ id: taskIdOf(request), status: result.status });
  });

  router.delete('/v1/tasks/:id', async (request, response) => {
    const taskId = taskIdOf(request);
    const record = await visibleRecord(store, principalOf(response), taskId);
    const result = await service.delete(record);
    if (result.outcome === 'subtask')
      throw new ApiError(
        'conflict',
        `Task "${taskId}" is a subtask of ${result.rootId}: delete that task, which removes its subtasks with it.`,
      );
    if (result.outcome === 'unended') {
      const which =
        result.id === taskId
          ? `Task "${taskId}" is ${result.status}`
          : `Subtask ${result.id} of task "${taskId}" is ${result.status ?? 'being created'}`;
      throw new ApiError(
        'conflict',
        `${which}: only a task that has ended (completed, failed or cancelled), with every subtask, can be deleted. Cancel it (POST /v1/tasks/${taskId}/cancel) and delete it once it has ended.`,
      );
    }
    response.status(204).end();
  });

  router.post('/v1/tasks/:id/retry', async (request, response) => {
    const record = await visibleRecord(store, principalOf(response), taskIdOf(request));
    const notRetryable = (status: string | undefined) =>
      new ApiError(
        'conflict',
        `Task "${taskIdOf(request)}" is ${status}: only a failed or cancelled task (not a subtask) can be retried.`,
      );
    const result = await service.retry(record);
    if (result.outcome === 'missing') throw notFound(taskIdOf(request));
    if (result.outcome === 'not_retryable') throw notRetryable(result.status);
    response.status(202).json({ id: result.id, status: 'queued', retryOf: taskIdOf(request) });
  });

  router.post('/v1/tasks/:id/fork', async (request, response) => {
    const source = await visibleRecord(store, principalOf(response), taskIdOf(request));
    const parsed = forkBody.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    // What the request can fix is said before the tenant's limits (a 409, then a 429): ForkError is a 409.
    const fork = await service.fork(source, parsed.data);
    response.status(202).json({ id: fork.id, status: 'queued', forkOf: { id: source.id, step: parsed.data.fromStep } });
  });

  router.post('/v1/tasks/:id/input', async (request, response) => {
    await visibleRecord(store, principalOf(response), taskIdOf(request));
    const parsed = answerSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const result = await service.answer(taskIdOf(request), parsed.data.text);
    if (!result.found) throw notFound(taskIdOf(request));
    if (!result.answered) {
      const approvals =
        result.status === 'waiting' ? ` It waits for approvals: POST /v1/tasks/${taskIdOf(request)}/approvals.` : '';
      throw new ApiError(
        'conflict',
        `Task "${taskIdOf(request)}" is ${result.status}, not waiting for an answer: only a task whose model asked a question takes input.${approvals}`,
      );
    }
    response.status(202).json({ id: taskIdOf(request), status: result.status });
  });

  router.post('/v1/tasks/:id/approvals', async (request, response) => {
    const taskId = taskIdOf(request);
    await visibleRecord(store, principalOf(response), taskId);
    const parsed = approvalSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const result = await service.decide(taskId, parsed.data);
    switch (result.kind) {
      case 'missing':
        throw notFound(taskId);
      case 'not_waiting':
        throw new ApiError(
          'conflict',
          `Task "${taskId}" is ${result.status}, with no call awaiting approval: only a task waiting for approvals takes a decision.`,
        );
      case 'unknown_call':
        throw new ApiError(
          'conflict',
          `No call "${parsed.data.callId.slice(0, 80)}" of task "${taskId}" awaits approval; those that do: ${result.waiting.join(', ') || 'none'}.`,
        );
      case 'decided_already':
        throw new ApiError(
          'conflict',
          `Call "${parsed.data.callId}" of task "${taskId}" was ${result.decision.approve ? 'approved' : 'rejected'} already: a call is decided once.`,
        );
      case 'decided':
        response
          .status(result.remaining ? 200 : 202)
          .json({ id: taskId, status: result.status, remaining: result.remaining });
    }
  });

  return router;
}

function modelNotAllowed(model: string, allowed: ReadonlySet<string>): string {
  return `"${model.slice(0, 80)}" is not a model this install allows; allowed: ${[...allowed].join(', ') || 'none (list them under `models` in the configuration file)'}`;
}

/**
 * Whose tasks a listing reads: an admin's reads every tenant's, a tenant's its own; a batch is always
 * the caller's tenant's (an admin's too: batch ids are each tenant's own names).
 */
function scopeOf(principal: Principal, batch: string | undefined): { tenant?: string } {
  return principal.admin && batch === undefined ? {} : { tenant: principal.tenant };
}

/**
 * With tracing on, each submitted task starts a trace of its own (`submit task`), linked to the
 * request's span: its runs, on any worker, continue it (its record keeps the traceparent).
 */
function submitSpans(tracing: Tracing, inputs: ReadonlyArray<{ agent?: string | undefined }>): Span[] | undefined {
  if (!tracing.enabled) return undefined;
  const request = trace.getActiveSpan()?.spanContext();
  return inputs.map((input) =>
    tracing.tracer.startSpan('submit task', {
      root: true,
      kind: SpanKind.PRODUCER,
      attributes: { 'agentq.agent': input.agent ?? 'planner' },
      ...(request ? { links: [{ context: request }] } : {}),
    }),
  );
}

/**
 * The `:id` of a route, checked to be a task id before it goes near Redis (it is part of key names):
 * what cannot be a task id names no task, a 404 that says what ids look like.
 */
export function taskIdOf(request: Request): string {
  const id = String(request.params.id ?? '');
  if (!isTaskId(id)) {
    throw new ApiError(
      'not_found',
      `No task with id "${id.length > 80 ? `${id.slice(0, 80)}…` : id}": task ids look like 01f6dd9a-1890-458d-a3e8-10066049cecf, or that followed by .v1.s2 for a subtask.`,
    );
  }
  return id;
}

/** The task's record when the caller may see it; another tenant's task is as unknown as a missing one. */
export async function visibleRecord(store: TaskStore, principal: Principal, taskId: string): Promise<TaskRecord> {
  const record = await store.getRecord(taskId);
  if (!record || !canSee(principal, record)) throw notFound(taskId);
  return record;
}

function notFound(taskId: string): ApiError {
  return new ApiError('not_found', `No task with id "${taskId}".`);
}

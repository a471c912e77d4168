/**
 * The API described (OpenAPI 3.1), served at `GET /openapi.json`. Built with zod-openapi from the same
 * zod schemas the routes validate with (`@agentq/tasks`'s submit, statuses and answer schemas, the
 * list query), and from api-schemas.ts for what they answer. Nothing here is written as JSON Schema by
 * hand; a test checks that every route of the app is in it and that it validates.
 */
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiResponsesObject } from 'zod-openapi';
import { forkSchema } from '@agentq/tasks';
import { answerSchema, approvalSchema, statusesSchema, submitSchema } from './request-schemas.js';
import { TASK_ID_PATTERN } from '@agentq/store';
import {
  bulkResultSchema,
  errorBodySchema,
  overviewSchema,
  poolListSchema,
  principalSchema,
  statusListSchema,
  submittedSchema,
  taskActionSchema,
  taskEventSchema,
  taskListSchema,
  taskViewSchema,
  tenantListSchema,
  usageSchema,
  deliverySchema,
  schedulePageSchema,
  webhookSecretSchema,
  scheduleViewSchema,
} from './api-schemas.js';
import { scheduleChangeSchema, scheduleListQuerySchema, scheduleSchema } from './routes/schedules.js';
import { bulkSchema, listQuerySchema } from './routes/tasks.js';
import { usageQuerySchema } from './routes/usage.js';

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(errorBodySchema) });

/** What any /v1 route may answer besides its own: a bad key, Redis away. */
const COMMON: ZodOpenApiResponsesObject = {
  '401': error('No API key, or not a valid one (when keys are configured).'),
  '503': error(
    'Redis does not answer, or is past its maxmemory; a request that creates tasks (submit, retry, fork) or a schedule, also once Redis is past AGENTQ_REDIS_FULL_PERCENT of its maxmemory (`details.usedBytes`, `details.maxBytes`): try again later (Retry-After).',
  ),
};
const FULL = error(
  'The tenant has limits.unfinished tasks not yet ended (`details.unfinished`), or holds limits.stored, ended ones included (`details.stored`), or its stored tasks wrote limits.mb to Redis (`details.writtenBytes`, `details.limitBytes`): nothing was created (`Retry-After`).',
);
const NOT_FOUND = error("No such task, or not one this key may see (another tenant's task is a 404 too).");
const SCHEDULE_NOT_FOUND = error("No such schedule, or another tenant's.");
const SCHEDULE_FULL = error(
  'The tenant reached its daily limit (limits.tokensPerDay/usdPerDay), or holds limits.schedules schedules, paused ones included (`details.schedules`, `details.limit`), or its stored tasks and schedules wrote limits.mb to Redis, with this schedule’s task and files (`details.writtenBytes`, `details.requestedBytes`, `details.limitBytes`): nothing was scheduled (`Retry-After`).',
);

const scheduleIdParam = {
  path: z.object({ id: z.string().meta({ description: 'A schedule id, `sch_<uuid>`.' }) }),
};

const taskIdParam = {
  path: z.object({
    id: z
      .string()
      .regex(TASK_ID_PATTERN)
      .meta({ description: 'A task id: a UUID, or `<root>.v<n>.s<n>` for a subtask.' }),
  }),
};

function v1(operation: ZodOpenApiOperationObject): ZodOpenApiOperationObject {
  return {
    ...operation,
    security: [{ bearer: [] }, { apiKeyHeader: [] }],
    responses: { ...operation.responses, ...COMMON },
  };
}

/**
 * Each operation's id (what a generated client names its method; @agentq/client uses the same names)
 * and tag (how a document viewer groups them). A route added without one fails the OpenAPI test.
 */
export const OPERATIONS: Record<string, { id: string; tag: string }> = {
  'POST /v1/tasks': { id: 'submitTasks', tag: 'tasks' },
  'GET /v1/tasks': { id: 'listTasks', tag: 'tasks' },
  'POST /v1/tasks/bulk': { id: 'bulkTasks', tag: 'tasks' },
  'POST /v1/tasks/statuses': { id: 'taskStatuses', tag: 'tasks' },
  'GET /v1/tasks/{id}': { id: 'getTask', tag: 'tasks' },
  'DELETE /v1/tasks/{id}': { id: 'deleteTask', tag: 'tasks' },
  'GET /v1/tasks/{id}/events': { id: 'taskEvents', tag: 'tasks' },
  'POST /v1/tasks/{id}/cancel': { id: 'cancelTask', tag: 'tasks' },
  'POST /v1/tasks/{id}/retry': { id: 'retryTask', tag: 'tasks' },
  'POST /v1/tasks/{id}/fork': { id: 'forkTask', tag: 'tasks' },
  'POST /v1/tasks/{id}/input': { id: 'answerTask', tag: 'tasks' },
  'POST /v1/tasks/{id}/approvals': { id: 'decideApproval', tag: 'tasks' },
  'GET /v1/tasks/{id}/files': { id: 'listTaskFiles', tag: 'files' },
  'GET /v1/tasks/{id}/files.tar.gz': { id: 'downloadTaskArchive', tag: 'files' },
  'GET /v1/tasks/{id}/files/{path}': { id: 'downloadTaskFile', tag: 'files' },
  'GET /v1/tasks/{id}/deliveries': { id: 'listDeliveries', tag: 'webhooks' },
  'POST /v1/tasks/{id}/deliveries/{deliveryId}/resend': { id: 'resendDelivery', tag: 'webhooks' },
  'GET /v1/webhooks/secret': { id: 'getWebhookSecret', tag: 'webhooks' },
  'POST /v1/schedules': { id: 'createSchedule', tag: 'schedules' },
  'GET /v1/schedules': { id: 'listSchedules', tag: 'schedules' },
  'GET /v1/schedules/{id}': { id: 'getSchedule', tag: 'schedules' },
  'PATCH /v1/schedules/{id}': { id: 'updateSchedule', tag: 'schedules' },
  'DELETE /v1/schedules/{id}': { id: 'deleteSchedule', tag: 'schedules' },
  'GET /v1/overview': { id: 'getOverview', tag: 'system' },
  'GET /v1/pools': { id: 'listPools', tag: 'system' },
  'GET /v1/usage': { id: 'getUsage', tag: 'tenants' },
  'GET /v1/tenants': { id: 'listTenants', tag: 'tenants' },
  'GET /v1/me': { id: 'getMe', tag: 'tenants' },
  'GET /metrics': { id: 'getMetrics', tag: 'system' },
  'GET /healthz': { id: 'getHealth', tag: 'system' },
  'GET /readyz': { id: 'getReadiness', tag: 'system' },
  'GET /openapi.json': { id: 'getOpenApi', tag: 'system' },
};

export function openApiDocument(): ReturnType<typeof createDocument> {
  const document = describedApi();
  for (const [path, operations] of Object.entries(document.paths ?? {}))
    for (const [method, operation] of Object.entries(
      operations as Record<string, { operationId?: string; tags?: string[] }>,
    )) {
      const named = OPERATIONS[`${method.toUpperCase()} ${path}`];
      if (named) Object.assign(operation, { operationId: named.id, tags: [named.tag] });
    }
  return document;
}

function describedApi(): ReturnType<typeof createDocument> {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'agentq',
      version: '1',
      description:
        'Submit batches of LLM agent tasks, follow every step live, cancel, answer and retry them. Errors are `{ "error": { "code", "message", "details" } }`.',
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: "An API key (the configuration file's tenants.<tenant>.keys), when keys are configured.",
        },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      },
    },
    paths: {
      '/v1/tasks': {
        post: v1({
          summary: 'Submit tasks (1 to 10,000)',
          requestBody: { content: json(submitSchema) },
          responses: {
            '202': {
              description: 'Queued (or, for an idempotency key seen before with the same body, the task it named).',
              content: json(submittedSchema),
            },
            '400': error(
              'A field is wrong: `details` names each, with its index (one idempotencyKey given to two tasks of different bodies, too); or a webhook this install cannot sign (no signing key for the tenant).',
            ),
            '409': error(
              "`idempotency_mismatch`: a task's idempotencyKey names a live task made from another body; `details.tasks` lists each such task's `index`, its `idempotencyKey` and the `taskId` the key names. Nothing of the request was submitted.",
            ),
            '413': error('The body is larger than AGENTQ_BODY_LIMIT.'),
            '429': error(
              "The tenant reached its daily limit (limits.tokensPerDay/usdPerDay; `Retry-After` and `details.resetsAt` say when the day's spending resets), or has limits.unfinished tasks not yet ended (`details.unfinished`), or holds limits.stored, ended ones included (`details.stored`), or its stored tasks wrote limits.mb to Redis (`details.writtenBytes`, `details.limitBytes`): nothing was submitted.",
            ),
          },
        }),
        get: v1({
          summary: 'List submitted tasks, newest first',
          requestParams: { query: listQuerySchema },
          responses: {
            '200': {
              description:
                'A page of tasks; pass `nextCursor` back as `cursor` for the next (a page of a search may hold fewer than `limit`, none even: go on until `nextCursor` is null).',
              content: json(taskListSchema),
            },
            '400': error('A bad query parameter.'),
            '429': error(
              'The tenant runs 2 searches (`q`), and 8 more wait their turn on this API process (or its 2 run on other API processes): send one at a time, and try again after `Retry-After`.',
            ),
          },
        }),
      },
      '/v1/tasks/bulk': {
        post: v1({
          summary: 'Cancel, retry or delete every task of a batch, or of a status',
          description:
            'Cancel applies to the tasks not ended yet (pending, queued, running, waiting); retry to failed and cancelled ones (each runs again as a new task, in the same batch); delete to ended ones that are not subtasks, each removed with its subtasks as DELETE /v1/tasks/{id} does (one whose subtask has not ended yet is left).',
          requestBody: { content: json(bulkSchema) },
          responses: {
            '202': { description: 'What was done.', content: json(bulkResultSchema) },
            '400': error(
              'No filter, or a status the action does not apply to; or a retry of tasks with a webhook this install cannot sign.',
            ),
            '429': FULL,
          },
        }),
      },
      '/v1/tasks/statuses': {
        post: v1({
          summary: 'The statuses of many tasks at once',
          requestBody: { content: json(statusesSchema) },
          responses: {
            '200': {
              description: 'Each id with its status (null: no such task visible to this key).',
              content: json(statusListSchema),
            },
            '400': error('A bad id list.'),
          },
        }),
      },
      '/v1/tasks/{id}': {
        get: v1({
          summary: 'A task',
          requestParams: taskIdParam,
          responses: { '200': { description: 'The task.', content: json(taskViewSchema) }, '404': NOT_FOUND },
        }),
        delete: v1({
          summary: 'Delete an ended task for good: its record, events, memory, subtasks and work directories',
          requestParams: taskIdParam,
          responses: {
            '204': { description: "Deleted (its work directories go with a worker's next sweep, within seconds)." },
            '404': NOT_FOUND,
            '409': error(
              'The task, or one of its subtasks, has not ended (cancel it first), or it is a subtask (delete its task).',
            ),
          },
        }),
      },
      '/v1/tasks/{id}/events': {
        get: v1({
          summary: "A task's events, or its whole tree's: Server-Sent Events, or the events so far as JSON",
          description:
            "With `Accept: text/event-stream`: each event as an SSE message (`id:` its seq, `event:` its type, `data:` the TaskEvent as JSON), replayed after `Last-Event-ID` (or `after`), then live; the stream closes after the task's last event. With `Accept: application/json`: the events so far. With `descendants=true`: the events of the task and of every descendant (children, theirs, and so on, found as they are started), each with its own `taskId` and `seq`; each message's `id:` is the tree's cursor (`12,c3.1:5`: the task's seq, then `<descendant id without the task's>:<seq>`), which `Last-Event-ID` (or `after`) gives back to resume; the stream closes once every task of the tree has ended. A tree's stream follows at most 500 tasks (breadth-first) and a cursor of 12,000 bytes: past them it sends one `tree.limit` message (`{ type, limit, taskId }`, the first task left out), and the JSON answer names that task in `Agentq-Tree-Left-Out`. A subtask's end repeated in its root's stream is left out of a tree's (its own stream has it).",
          requestParams: {
            ...taskIdParam,
            query: z.object({
              after: z
                .string()
                .regex(/^\d{1,15}(,[a-z0-9.]{1,80}:\d{1,15})*$/)
                .optional()
                .meta({
                  description:
                    "The seq of an event already seen (0: from the start); with `descendants=true`, a tree's cursor (`12,c3.1:5`).",
                }),
              descendants: z
                .enum(['true', 'false'])
                .optional()
                .meta({ description: "`true`: the task's whole tree. Default false: the task's own events." }),
            }),
            header: z.object({
              'last-event-id': z
                .string()
                .regex(/^\d{1,15}(,[a-z0-9.]{1,80}:\d{1,15})*$/)
                .optional()
                .meta({ description: 'As `after`; sent by EventSource when it reconnects.' }),
            }),
          },
          responses: {
            '200': {
              description: 'The events.',
              headers: z.object({
                'agentq-tree-left-out': z.string().optional().meta({
                  description:
                    'With `descendants=true` and JSON: the first task of a tree too large to read at once (read its own tree for the rest).',
                }),
              }),
              content: {
                'text/event-stream': {
                  schema: z.string().meta({ description: 'SSE messages whose `data` is a TaskEvent.' }),
                },
                'application/json': { schema: z.array(taskEventSchema) },
              },
            },
            '400': error("A bad Last-Event-ID or after (a tree's cursor that is not one), or descendants."),
            '404': NOT_FOUND,
            '429': error(
              "The key's tenant already holds limits.sseStreams streams open on this API process (`Retry-After`).",
            ),
          },
        }),
      },
      '/v1/tasks/{id}/cancel': {
        post: v1({
          summary: 'Cancel a task',
          requestParams: taskIdParam,
          responses: {
            '202': {
              description: 'Cancelled, or asked to stop (a running task stops within a second).',
              content: json(taskActionSchema),
            },
            '404': NOT_FOUND,
          },
        }),
      },
      '/v1/tasks/{id}/retry': {
        post: v1({
          summary: 'Run a failed or cancelled task again, as a new task',
          requestParams: taskIdParam,
          responses: {
            '202': { description: 'The new task.', content: json(taskActionSchema) },
            '404': NOT_FOUND,
            '400': error('The task has a webhook this install cannot sign (no signing key for the tenant).'),
            '409': error('The task is not failed or cancelled, or is a subtask.'),
            '429': FULL,
          },
        }),
      },
      '/v1/tasks/{id}/fork': {
        post: v1({
          summary:
            'Fork a task from a step: a new task that keeps the steps before it, then goes on with its own prompt, model or agent',
          description:
            'No model call before `fromStep` is made again: the new task starts from the source’s memory up to that step. From step 1 `prompt` replaces the prompt; from a later step it is the user’s next message. `model` must be one the install allows.',
          requestParams: taskIdParam,
          requestBody: { content: json(forkSchema) },
          responses: {
            '202': { description: 'The new task, and what it forks.', content: json(taskActionSchema) },
            '400': error('A bad field, or a model the install does not allow.'),
            '404': NOT_FOUND,
            '409': error('The task is a planned task (fork one of its subtasks), or has fewer steps than fromStep.'),
            '429': FULL,
          },
        }),
      },
      '/v1/tasks/{id}/input': {
        post: v1({
          summary: "Answer a waiting task's question",
          requestParams: taskIdParam,
          requestBody: { content: json(answerSchema) },
          responses: {
            '202': { description: 'The answer is in; the task is queued again.', content: json(taskActionSchema) },
            '400': error('No text.'),
            '404': NOT_FOUND,
            '409': error('The task is not waiting.'),
          },
        }),
      },
      '/v1/tasks/{id}/approvals': {
        post: v1({
          summary: 'Approve or reject a call that waits for approval',
          description:
            "A waiting task's `waitingFor.calls` are the calls an approval rule of its agent holds. Each is decided once; once all are, the task is queued again and runs on any worker: an approved call runs, a rejected one is answered to its model with the reason.",
          requestParams: taskIdParam,
          requestBody: { content: json(approvalSchema) },
          responses: {
            '200': {
              description: 'Decided; `remaining` calls still wait.',
              content: json(z.object({ id: z.string(), status: z.enum(['waiting']), remaining: z.number().int() })),
            },
            '202': {
              description: 'Decided, the last one: the task is queued again.',
              content: json(z.object({ id: z.string(), status: z.enum(['queued']), remaining: z.literal(0) })),
            },
            '400': error('A field is missing or wrong.'),
            '404': NOT_FOUND,
            '409': error('The task waits for no approval, no such call waits, or the call was decided already.'),
          },
        }),
      },
      '/v1/tasks/{id}/files': {
        get: v1({
          summary: "What a task's folder holds: its files (links and hard links left out), by path",
          description:
            "A planned task's files are in its subtasks' folders (its `children`). An empty list for a task that has not made its folder yet.",
          requestParams: taskIdParam,
          responses: {
            '200': {
              description: 'Its files; `truncated` when there were more than 10,000.',
              content: json(
                z.object({
                  files: z.array(
                    z.object({
                      path: z.string(),
                      size: z.number().int(),
                      modifiedAt: z.string().meta({
                        description:
                          'RFC 3339. A time its task set outside years 1 to 9999 is shown as the nearest of them.',
                      }),
                    }),
                  ),
                  truncated: z.boolean(),
                }),
              ),
            },
            '404': NOT_FOUND,
            '409': error(
              "The task has files, but not on this API's AGENTQ_DATA_DIR (the workers' volume is not mounted).",
            ),
          },
        }),
      },
      '/v1/tasks/{id}/files.tar.gz': {
        get: v1({
          summary: "All of a task's folder as a .tar.gz (folders and regular files; never a link)",
          requestParams: taskIdParam,
          responses: {
            '200': {
              description:
                'The archive, as an attachment. A file its running task changes meanwhile is archived at the size it had when opened (cut, or padded with zeros).',
              content: { 'application/gzip': {} },
            },
            '404': NOT_FOUND,
          },
        }),
      },
      '/v1/tasks/{id}/files/{path}': {
        get: v1({
          summary: "One file of a task's folder, byte for byte, as an attachment (never shown as a page)",
          requestParams: {
            path: taskIdParam.path.extend({
              path: z
                .string()
                .meta({ description: 'The file’s path in the folder, `/`-separated (`out/report.csv`).' }),
            }),
          },
          responses: {
            '200': {
              description:
                'The file. One its running task cuts short while it is sent is cut short here too (fewer bytes than its content-length).',
              content: { 'application/octet-stream': {} },
            },
            '400': error(
              'The path names a folder, or one no file can have (a part over 255 bytes, the whole over 4,096).',
            ),
            '404': error('No such task, or no such file (a link out of the folder, or a hard link, is none).'),
            '409': error(
              "Its running task cut the file short before any of it was sent: ask again. Or the task's folder is not on this API's AGENTQ_DATA_DIR, or not readable by its user.",
            ),
          },
        }),
      },
      '/v1/tasks/{id}/deliveries': {
        get: v1({
          summary: "A task's webhook deliveries: each attempt, its status code or error, and what is due next",
          requestParams: taskIdParam,
          responses: {
            '200': {
              description: 'Its deliveries, oldest first (none for a task without a webhook).',
              content: json(z.object({ deliveries: z.array(deliverySchema) })),
            },
            '404': NOT_FOUND,
          },
        }),
      },
      '/v1/tasks/{id}/deliveries/{deliveryId}/resend': {
        post: v1({
          summary: 'Send a delivery again now, with the same webhook-id (its retry schedule starts over)',
          requestParams: {
            path: taskIdParam.path.extend({
              deliveryId: z.string().meta({ description: 'A delivery id, `msg_<task>_<seq>`.' }),
            }),
          },
          responses: {
            '202': { description: 'The delivery, due now.', content: json(deliverySchema) },
            '404': error('No such task, or no such delivery of it.'),
            '409': error('An attempt of the delivery is under way (its lease held): resend it once it has ended.'),
          },
        }),
      },
      '/v1/webhooks/secret': {
        get: v1({
          summary: "The key a tenant's webhook deliveries are signed with, for its receiver to verify them",
          requestParams: { query: usageQuerySchema },
          responses: {
            '200': {
              description: "The key's tenant's signing key (an admin's: the tenant asked for).",
              content: json(webhookSecretSchema),
            },
            '400': error('A bad or repeated query parameter.'),
            '403': error("A tenant's key asked for another tenant."),
            '404': error('This install signs no webhooks (no AGENTQ_WEBHOOK_SECRET, no secret of the tenant).'),
          },
        }),
      },
      '/v1/schedules': {
        post: v1({
          summary: 'Schedule a task: submitted on a cron pattern (in a time zone) or every so many milliseconds',
          description:
            'The schedule holds its task (files included) for as long as it lives: it is admitted as a submit is, and counts toward the tenant’s limits.mb and limits.schedules. Each run is a task of the caller’s tenant carrying `scheduleId`, admitted as a submit is (the tenant’s limits hold). With `overlap: skip` (the default) a run while the last one has not ended is skipped, and the skip listed.',
          requestBody: { content: json(scheduleSchema) },
          responses: {
            '201': { description: 'The schedule.', content: json(scheduleViewSchema) },
            '400': error(
              'A bad cron pattern or time zone, both or neither of cron and every, or a bad task (a webhook this install cannot sign too).',
            ),
            '429': SCHEDULE_FULL,
          },
        }),
        get: v1({
          summary: 'The tenant’s schedules (an admin’s: every tenant’s), newest first, a page at a time',
          description: 'Each with its task’s files by name and size, never their contents.',
          requestParams: { query: scheduleListQuerySchema },
          responses: {
            '200': {
              description: 'A page of schedules; pass `nextCursor` back as `cursor` for the next.',
              content: json(schedulePageSchema),
            },
            '400': error('A bad query parameter.'),
            '403': error('`tenant` names another tenant, and the key is not an admin’s.'),
          },
        }),
      },
      '/v1/schedules/{id}': {
        get: v1({
          summary: 'A schedule, with its next run and its last runs',
          requestParams: scheduleIdParam,
          responses: {
            '200': { description: 'The schedule.', content: json(scheduleViewSchema) },
            '404': SCHEDULE_NOT_FOUND,
          },
        }),
        patch: v1({
          summary: 'Pause, resume or change a schedule (its timing, overlap or task)',
          requestParams: scheduleIdParam,
          requestBody: { content: json(scheduleChangeSchema) },
          responses: {
            '200': { description: 'The schedule as changed.', content: json(scheduleViewSchema) },
            '400': error('A bad field, or a task with a webhook this install cannot sign.'),
            '404': SCHEDULE_NOT_FOUND,
            '409': error('A resume of a schedule whose tenant is no longer in the configuration file.'),
            '429': SCHEDULE_FULL,
          },
        }),
        delete: v1({
          summary: 'Delete a schedule: it fires no more (its tasks stay); its bytes go back to its tenant',
          requestParams: scheduleIdParam,
          responses: { '204': { description: 'Deleted.' }, '404': SCHEDULE_NOT_FOUND },
        }),
      },
      '/v1/overview': {
        get: v1({
          summary:
            'The landing page in one call: tasks by status, jobs per minute, and figures of the newest ended tasks',
          responses: { '200': { description: 'The overview.', content: json(overviewSchema) } },
        }),
      },
      '/v1/pools': {
        get: v1({
          summary: 'The pools: queue depths, throughput, workers online, tool isolation',
          responses: { '200': { description: 'Every pool.', content: json(poolListSchema) } },
        }),
      },
      '/v1/usage': {
        get: v1({
          summary: "A tenant's usage against its limits: tasks unfinished and stored, bytes written, today's spending",
          requestParams: { query: usageQuerySchema },
          responses: {
            '200': {
              description: "The key's tenant's usage (an admin's: the tenant asked for).",
              content: json(usageSchema),
            },
            '400': error('A bad or repeated query parameter.'),
            '403': error("A tenant's key asked for another tenant."),
          },
        }),
      },
      '/v1/tenants': {
        get: v1({
          summary: "Every tenant's usage against its limits (admins only): the tenants the keys name, and default",
          responses: {
            '200': { description: 'Each tenant, as GET /v1/usage answers it.', content: json(tenantListSchema) },
            '403': error('Not an admin key.'),
          },
        }),
      },
      '/v1/me': {
        get: v1({
          summary: "The key's tenant, and whether it is an admin's",
          responses: { '200': { description: 'Who this key is.', content: json(principalSchema) } },
        }),
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          security: [{ bearer: [] }, { apiKeyHeader: [] }],
          responses: {
            '200': { description: 'The Prometheus text format.', content: { 'text/plain': { schema: z.string() } } },
            '401': error('No valid key (when keys are configured).'),
            '403': error('Not an admin key.'),
          },
        },
      },
      '/healthz': {
        get: {
          summary: 'The process is up',
          responses: { '200': { description: 'Up.', content: json(z.object({ status: z.literal('ok') })) } },
        },
      },
      '/readyz': {
        get: {
          summary: 'Redis answers',
          responses: {
            '200': { description: 'Ready.', content: json(z.object({ status: z.literal('ready') })) },
            '503': error('Redis does not answer within a second.'),
          },
        },
      },
      '/openapi.json': {
        get: {
          summary: 'This document',
          responses: {
            '200': {
              description: 'OpenAPI 3.1.',
              content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } },
            },
          },
        },
      },
    },
  });
}

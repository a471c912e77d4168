/**
 * Schedules: a task submitted on a cron pattern (in a time zone) or every so many milliseconds, as the
 * caller's tenant's. Its task is checked as a submit's is (agents, models, webhook, files); the schedule
 * is held to the tenant's limits as a submit is (limits.mb, and limits.schedules), and each of its runs
 * passes them when it fires. The list is paged and shows a task's files by name and size, never their
 * contents. A tenant sees and changes only its own; an admin every tenant's (`?tenant=` to list one's).
 */
import { CronExpressionParser } from 'cron-parser';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { TENANT_NAME } from '@agentq/config';
import type { ScheduleService } from '@agentq/tasks';
import { fieldsOnly } from '@agentq/tasks';
import type { StoredSchedule } from '@agentq/store';
import { principalOf, type Principal } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { invalid, parsedQuery } from '../request-input.js';
import { submitBodyFor, type SubmitRules } from './tasks.js';

/** The shortest `every`: a schedule is not a loop. */
const EVERY_MIN_MS = 1_000;
const EVERY_MAX_MS = 366 * 24 * 3600 * 1000;

const timingFields = {
  cron: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'A cron pattern, 5 fields (minute hour day month weekday) or 6 (seconds first).' }),
  timezone: z
    .string()
    .max(64)
    .optional()
    .meta({ description: 'The IANA time zone of `cron` (`Europe/Paris`). Default UTC.' }),
  every: z
    .number()
    .int()
    .min(EVERY_MIN_MS, `must be at least ${EVERY_MIN_MS} ms`)
    .max(EVERY_MAX_MS)
    .optional()
    .meta({ description: 'Milliseconds between runs, instead of `cron`.' }),
  overlap: z.enum(['skip', 'allow']).optional().meta({
    description:
      '`skip` (default): a run is skipped (and the skip listed) while the last run’s task has not ended; `allow`: runs may overlap.',
  }),
  paused: z.boolean().optional(),
};

export const scheduleSchema = fieldsOnly({
  ...timingFields,
  task: z.record(z.string(), z.unknown()).meta({ description: 'One task, as `POST /v1/tasks` takes it.' }),
}).superRefine(checkTiming(true));

// Strict: a misspelt `?tennat=` would otherwise list the caller's own as if another's were asked for.
export const scheduleListQuerySchema = fieldsOnly(
  {
    tenant: z.string().regex(TENANT_NAME, 'is not a tenant name (1 to 64 letters, digits, _ . -)').optional().meta({
      description:
        "One tenant's (an admin key's only; its own for any key). Default: the key's own, or every tenant's for an admin.",
    }),
    limit: z.coerce.number().int().min(1).max(500).default(50),
    cursor: z.string().regex(/^\d+$/, 'must be a nextCursor from a previous page').optional(),
  },
  '',
  'parameter',
);

export const scheduleChangeSchema = fieldsOnly({
  ...timingFields,
  task: z.record(z.string(), z.unknown()).optional(),
}).superRefine(checkTiming(false));

/** One of cron and every (for a new schedule); a time zone only with a cron; both valid. */
function checkTiming(required: boolean) {
  return (
    body: { cron?: string | undefined; timezone?: string | undefined; every?: number | undefined },
    context: z.RefinementCtx,
  ) => {
    if (body.cron !== undefined && body.every !== undefined)
      context.addIssue({ code: 'custom', path: ['every'], message: 'give "cron" or "every", not both' });
    else if (required && body.cron === undefined && body.every === undefined)
      context.addIssue({
        code: 'custom',
        path: ['cron'],
        message: 'give "cron" (a pattern) or "every" (milliseconds)',
      });
    if (body.timezone !== undefined && body.every !== undefined)
      context.addIssue({ code: 'custom', path: ['timezone'], message: 'is for "cron" only' });
    if (body.timezone !== undefined) {
      try {
        new Intl.DateTimeFormat('en', { timeZone: body.timezone });
      } catch {
        context.addIssue({
          code: 'custom',
          path: ['timezone'],
          message: `"${body.timezone}" is not an IANA time zone (e.g. Europe/Paris)`,
        });
        return;
      }
    }
    if (body.cron !== undefined) {
      try {
        CronExpressionParser.parse(body.cron, { tz: body.timezone ?? 'UTC' });
      } catch (error) {
        context.addIssue({
          code: 'custom',
          path: ['cron'],
          message: `is not a cron pattern: ${(error as Error).message}`,
        });
      }
    }
  };
}

export function schedulesRouter(options: SubmitRules & { schedules: ScheduleService }): Router {
  const router = Router();
  const { submitBody } = submitBodyFor(options);
  // The task of a schedule, checked as a submit's is; its problems are said at `task.`.
  const checkTask = (task: Record<string, unknown>) => {
    const parsed = submitBody.safeParse({ tasks: [task] });
    if (parsed.success) return;
    const issues = parsed.error.issues.map((issue) => ({ ...issue, path: ['task', ...issue.path.slice(2)] }));
    throw invalid(new z.ZodError(issues), 'The request body');
  };

  router.post('/v1/schedules', async (request, response) => {
    const parsed = scheduleSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    checkTask(parsed.data.task);
    const tenant = principalOf(response).tenant;
    const schedule = await options.schedules.create(tenant, parsed.data);
    response.status(201).json(schedule);
  });

  router.get('/v1/schedules', async (request, response) => {
    const { tenant, limit, cursor } = parsedQuery(scheduleListQuerySchema, request);
    const principal = principalOf(response);
    if (tenant !== undefined && tenant !== principal.tenant && !principal.admin)
      throw new ApiError(
        'forbidden',
        `This key is tenant ${principal.tenant}'s: it lists its own schedules only (leave tenant out). An admin key lists any tenant's.`,
      );
    const scope = principal.admin ? tenant : principal.tenant;
    response.json(await options.schedules.list({ tenant: scope, limit, cursor }));
  });

  router.get('/v1/schedules/:id', async (request, response) => {
    const schedule = await visibleSchedule(options.schedules, principalOf(response), request);
    response.json(await options.schedules.view(schedule));
  });

  router.patch('/v1/schedules/:id', async (request, response) => {
    const schedule = await visibleSchedule(options.schedules, principalOf(response), request);
    const parsed = scheduleChangeSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    if (parsed.data.task) checkTask(parsed.data.task);
    if (parsed.data.timezone !== undefined && parsed.data.cron === undefined && schedule.cron === undefined)
      throw new ApiError('invalid_request', 'The request body is invalid: timezone: is for "cron" only');
    const changed = await options.schedules.update(schedule, parsed.data);
    if (!changed) throw notFound(schedule.id);
    response.json(changed);
  });

  router.delete('/v1/schedules/:id', async (request, response) => {
    const schedule = await visibleSchedule(options.schedules, principalOf(response), request);
    await options.schedules.remove(schedule);
    response.status(204).end();
  });

  return router;
}

/** The schedule when the caller's tenant owns it (an admin's key reaches every one); else a 404. */
async function visibleSchedule(
  schedules: ScheduleService,
  principal: Principal,
  request: Request,
): Promise<StoredSchedule> {
  const id = String(request.params.id ?? '');
  const schedule = /^sch_[0-9a-f-]{36}$/.test(id) ? await schedules.get(id) : undefined;
  if (!schedule || (schedule.tenant !== principal.tenant && !principal.admin)) throw notFound(id);
  return schedule;
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `No schedule with id "${id.slice(0, 80)}": GET /v1/schedules lists yours.`);
}

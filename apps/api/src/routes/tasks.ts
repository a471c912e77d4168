/** Submit, read, list and cancel tasks. */
import { Router } from 'express';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { answerSchema, answerTask, cancelTask, enqueueTasks, retryTask, submitSchema, TASK_STATUSES, type AgentQueues, type TaskStore } from '@agentq/queue';
import { canSee, principalOf, type Principal } from '../api-auth.js';
import { ApiError } from '../api-error.js';

const listQuerySchema = z.object({
  status: z.enum(TASK_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().regex(/^\d+$/, 'must be a nextCursor from a previous page').optional(),
  q: z.string().trim().min(1).max(200).optional(),
});

const statusesSchema = z.object({ ids: z.array(z.string().min(1)).min(1).max(10_000) });

export function tasksRouter(options: { store: TaskStore; queues: AgentQueues; publisher: Redis }): Router {
  const { store, queues } = options;
  const router = Router();

  router.post('/v1/tasks', async (request, response) => {
    const parsed = submitSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const created = await store.create(parsed.data.tasks, { tenant: principalOf(response).tenant });
    try {
      await enqueueTasks({ queues, tasks: created });
    } catch (error) {
      const failure = { code: 'enqueue_failed', message: `Could not enqueue: ${(error as Error).message}` };
      await Promise.all(
        created.map((task) =>
          store.commit({ taskId: task.id, expect: ['queued'], status: 'failed', fields: { error: JSON.stringify(failure) }, events: [{ type: 'task.failed', data: { error: failure } }] }),
        ),
      );
      throw new ApiError('unavailable', `${failure.message}. Nothing was queued; submit again.`);
    }
    response.status(202).json({ tasks: created.map((task) => ({ id: task.id, status: 'queued' })) });
  });

  router.get('/v1/tasks', async (request, response) => {
    const parsed = listQuerySchema.safeParse(request.query);
    if (!parsed.success) throw invalid(parsed.error, 'The query');
    const principal = principalOf(response);
    response.json(await store.list({ ...parsed.data, ...(principal.admin ? {} : { tenant: principal.tenant }) }));
  });

  // Many statuses in one call, for clients that watch a batch (the CLI's progress bar).
  router.post('/v1/tasks/statuses', async (request, response) => {
    const parsed = statusesSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    response.json({ tasks: await store.statuses(parsed.data.ids, principalOf(response)) });
  });

  router.get('/v1/tasks/:id', async (request, response) => {
    const task = await store.get(request.params.id);
    if (!task || !canSee(principalOf(response), task)) throw notFound(request.params.id);
    response.json(task);
  });

  router.post('/v1/tasks/:id/cancel', async (request, response) => {
    await visibleRecord(store, principalOf(response), request.params.id);
    const result = await cancelTask({ store, queues, publisher: options.publisher, taskId: request.params.id });
    if (!result.found) throw notFound(request.params.id);
    response.status(202).json({ id: request.params.id, status: result.status });
  });

  router.post('/v1/tasks/:id/retry', async (request, response) => {
    await visibleRecord(store, principalOf(response), request.params.id);
    const result = await retryTask({ store, queues, taskId: request.params.id });
    if (!result.found) throw notFound(request.params.id);
    if (!result.newId) throw new ApiError('conflict', `Task "${request.params.id}" is ${result.status}: only a failed or cancelled task (not a subtask) can be retried.`);
    response.status(202).json({ id: result.newId, status: 'queued', retryOf: request.params.id });
  });

  router.post('/v1/tasks/:id/input', async (request, response) => {
    await visibleRecord(store, principalOf(response), request.params.id);
    const parsed = answerSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(parsed.error, 'The request body');
    const result = await answerTask({ store, queues, taskId: request.params.id, text: parsed.data.text });
    if (!result.found) throw notFound(request.params.id);
    if (!result.answered) {
      throw new ApiError('conflict', `Task "${request.params.id}" is ${result.status}, not waiting for an answer: only a waiting task takes input.`);
    }
    response.status(202).json({ id: request.params.id, status: result.status });
  });

  return router;
}

/** The task's record when the caller may see it; another tenant's task is as unknown as a missing one. */
export async function visibleRecord(store: TaskStore, principal: Principal, taskId: string): Promise<Record<string, string>> {
  const record = await store.getRecord(taskId);
  if (!record || !canSee(principal, record)) throw notFound(taskId);
  return record;
}

export function notFound(taskId: string): ApiError {
  return new ApiError('not_found', `No task with id "${taskId}".`);
}

function invalid(error: z.ZodError, what: string): ApiError {
  const details = error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const summary = details
    .slice(0, 5)
    .map((detail) => `${detail.path || '(root)'}: ${detail.message}`)
    .join('; ');
  return new ApiError('invalid_request', `${what} is invalid: ${summary}${details.length > 5 ? ` (and ${details.length - 5} more)` : ''}`, details);
}

/**
 * The bodies of the API's requests that are the API's own: a submit's envelope (its batch and its
 * tasks), the statuses a client asks about, an answer to a waiting task, a decision on a call. What a task is, as the task
 * service takes it (taskInputSchema, forkSchema), is the tasks package's.
 */
import { z } from 'zod';
import { MAX_APPROVAL_REASON, MAX_CALL_ID_LENGTH } from '@agentq/contract';
import { TASK_ID_PATTERN } from '@agentq/store';
import { fieldsOnly, taskDigest, taskInputSchema } from '@agentq/tasks';

const MAX_TASKS_PER_SUBMIT = 10_000;

/** A batch id: a client's name for tasks submitted together, to list and act on them as one. */
export const BATCH_PATTERN = /^[\w.:-]{1,64}$/;
export const batchSchema = z.string().regex(BATCH_PATTERN, 'must be 1 to 64 letters, digits, "_", ".", ":" or "-"');

export const submitSchema = fieldsOnly({
  /** Every task of the request belongs to this batch (GET /v1/tasks?batch=...). */
  batch: batchSchema.optional(),
  tasks: z
    .array(taskInputSchema)
    .min(1, 'must hold at least one task')
    .max(MAX_TASKS_PER_SUBMIT, `at most ${MAX_TASKS_PER_SUBMIT} tasks per request`),
}).superRefine((body, context) => {
  // One key names one task: given twice in a request, it is one task asked for twice, never two.
  const given = new Map<string, number[]>();
  body.tasks.forEach(({ idempotencyKey: key }, index) => {
    if (key === undefined) return;
    const places = given.get(key);
    if (places) places.push(index);
    else given.set(key, [index]);
  });
  for (const [first, ...again] of given.values()) {
    const digest = again.length ? taskDigest(body.tasks[first!]!, body.batch) : '';
    for (const index of again)
      if (taskDigest(body.tasks[index]!, body.batch) !== digest)
        context.addIssue({
          code: 'custom',
          path: ['tasks', index, 'idempotencyKey'],
          message: `is tasks[${first}]'s key too, with another body: one key names one task; give each task a key of its own`,
        });
  }
});

/** Which tasks `POST /v1/tasks/statuses` asks about. */
export const statusesSchema = fieldsOnly({
  ids: z.array(z.string().regex(TASK_ID_PATTERN, 'is not a task id')).min(1).max(10_000),
});

export const approvalSchema = fieldsOnly({
  callId: z
    .string()
    .min(1)
    .max(MAX_CALL_ID_LENGTH)
    .meta({ description: 'The call decided: an id of `waitingFor.calls`.' }),
  approve: z.boolean(),
  reason: z
    .string()
    .trim()
    .max(MAX_APPROVAL_REASON)
    .optional()
    .meta({ description: "Why; a rejected call's reason is what its model reads." }),
});

export const answerSchema = fieldsOnly({ text: z.string().trim().min(1, 'must be a non-empty string').max(100_000) });

/**
 * What a client may submit, what a task is, and what is stored and shown of it. Submissions are
 * validated with zod at the API; job payloads again when a worker picks them up.
 */
import { z } from 'zod';

import { AGENT_NAME, type AgentPool } from '@agentq/contract';
import { checkPlan, type PlannedSubtask } from '@agentq/core';
/** Where a task without an `agent` goes: the planner breaks it into subtasks. */
export const DEFAULT_POOL: AgentPool = 'planner';

/** The pool a submitted task runs in: the one it names, or the planner's. */
export function poolOf(input: { agent?: AgentPool | undefined }): AgentPool {
  return input.agent ?? DEFAULT_POOL;
}

/** How deep and how large a task's `metadata` may be: it is stored and sent back with the task. */
const METADATA_MAX_DEPTH = 20;
const METADATA_MAX_BYTES = 64 * 1024;

/** How deeply a JSON value nests, counted without recursion (a hostile value may nest thousands deep). */
function jsonDepth(value: unknown, stopAt: number): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length) {
    const { value: current, depth } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > stopAt) return deepest;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

/**
 * A request object that refuses fields it does not know, naming them and the ones it takes (and
 * `hint`, what to do instead): a misspelt `priorty` (or a bulk action's `batc`, or a list's `stauts`)
 * is an error to fix, not a field silently dropped for a default. `noun`: what the request calls them.
 */
export function fieldsOnly<Shape extends z.core.$ZodLooseShape>(shape: Shape, hint = '', noun = 'field') {
  const known = Object.keys(shape)
    .map((key) => JSON.stringify(key))
    .join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown ${noun}${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}: the ${noun}s are ${known}${hint}`
        : undefined,
  });
}

/** An agent's name as a request gives it; whether the configuration has it is checked where that is known. */
const agentName = z.string().regex(AGENT_NAME, 'is not an agent name (a lower-case word)');

/** At most this many subtasks in a plan a client gives (the API holds it to AGENTQ_MAX_SUBTASKS too). */
export const GIVEN_PLAN_MAX_SUBTASKS = 100;

/** A subtask of a plan a client gives: the planner model's shape. */
const givenSubtaskSchema = fieldsOnly({
  id: z.string().trim().min(1, 'must not be empty').max(64),
  agent: agentName,
  task: z.string().trim().min(1, 'must describe the work').max(20_000),
  /** The ids of the subtasks whose results it needs: it runs once they all completed. */
  need: z.array(z.string()).max(GIVEN_PLAN_MAX_SUBTASKS).optional(),
});

/**
 * A plan a client gives instead of the planner model's: checked as the model's is (core's checkPlan:
 * unique ids, needs that exist, no cycle), each problem said in words that say what to change.
 */
export const givenPlanSchema = z
  .array(givenSubtaskSchema)
  .min(1, 'must hold at least one subtask')
  .max(GIVEN_PLAN_MAX_SUBTASKS, `at most ${GIVEN_PLAN_MAX_SUBTASKS} subtasks`)
  .superRefine((plan, context) => {
    // Which agents exist is the configuration's: the API checks the names against it.
    const check = checkPlan({ plan }, { maxSubtasks: GIVEN_PLAN_MAX_SUBTASKS });
    if (!check.ok) for (const message of check.errors) context.addIssue({ code: 'custom', message });
  });

/** A given plan as its task's record keeps it (what CREATE stores, and what its bytes count). */
export function storedPlan(plan: z.infer<typeof givenPlanSchema>): string {
  return JSON.stringify(
    plan.map(({ id, agent, task, need }): PlannedSubtask => ({ id, agent, task, need: need ?? [] })),
  );
}

export const taskInputSchema = fieldsOnly(
  {
    prompt: z.string().trim().min(1, 'must be a non-empty string').max(200_000),
    /** An agent of the configuration runs the task directly; without one, the planner breaks it into subtasks. */
    agent: agentName.optional(),
    /** 1 (lowest) to 10 (highest); default 5. */
    priority: z.number().int().min(1).max(10).optional(),
    /** The model it (and every subtask of its plan) runs on, one the operator allows; default the pool's. */
    model: z.string().min(1).max(200).optional(),
    /**
     * The client's own name for this submission: the same key again (same tenant, within the retention)
     * answers the task it first created and creates nothing, so a POST may be retried safely.
     */
    idempotencyKey: z.string().min(1, 'must be a non-empty string').max(256).optional(),
    /** Anything the client wants back with the task: at most 20 levels deep and 64 KiB of JSON. */
    metadata: z
      .preprocess(
        (value, context) => {
          // JSON.parse keeps a "__proto__" key as a key, which the record below would drop without a word.
          if (value !== null && typeof value === 'object' && Object.hasOwn(value, '__proto__')) {
            context.addIssue({
              code: 'custom',
              message: 'has a key "__proto__", which cannot be stored: rename it',
              input: value,
            });
          }
          return value;
        },
        z.record(z.string(), z.unknown()),
      )
      .superRefine((metadata, context) => {
        const depth = jsonDepth(metadata, METADATA_MAX_DEPTH);
        if (depth > METADATA_MAX_DEPTH) {
          context.addIssue({
            code: 'custom',
            message: `is nested more than ${METADATA_MAX_DEPTH} levels deep: flatten it`,
          });
          return;
        }
        const bytes = Buffer.byteLength(JSON.stringify(metadata));
        if (bytes > METADATA_MAX_BYTES)
          context.addIssue({
            code: 'custom',
            message: `is ${bytes} bytes of JSON, more than ${METADATA_MAX_BYTES}: keep large data elsewhere and put a reference here`,
          });
      })
      .optional(),
    /**
     * What the task may spend, with every subtask of its plan: past it, its work stops (reason `budget`)
     * and it fails with what was done. A model call under way when it is spent still ends.
     */
    budget: fieldsOnly({
      usd: z.number().positive().max(1_000_000).optional(),
      tokens: z.number().int().positive().max(1e12).optional(),
    })
      .refine((budget) => budget.usd !== undefined || budget.tokens !== undefined, 'must name "usd", "tokens" or both')
      .optional(),
    /**
     * The task's plan, given instead of asking the planner model for one: its subtasks run as a DAG across
     * the pools, and the planner model writes only the final answer. Never re-planned.
     */
    plan: givenPlanSchema.optional().meta({
      description:
        "The task's own plan, run instead of asking the planner model for one: each subtask runs in its agent's pool once every subtask it `need`s completed. Not with `agent`; never re-planned.",
    }),
  },
  ' (anything of your own goes in "metadata")',
).superRefine((task, context) => {
  if (task.plan && task.agent)
    context.addIssue({
      code: 'custom',
      path: ['agent'],
      message: 'a task with a plan is planned: each subtask names its agent; leave "agent" out',
    });
});
export type TaskInput = z.infer<typeof taskInputSchema>;

/** `POST /v1/tasks/:id/fork`: a new task from a task's steps before `fromStep`, then its own way. */
export const forkSchema = fieldsOnly({
  /** The step to run again (1 = from the start): the steps before it are kept, not run again. */
  fromStep: z.number().int().min(1),
  /** From step 1 it replaces the prompt; from a later step it is the user's next message. */
  prompt: z.string().trim().min(1, 'must be a non-empty string').max(200_000).optional(),
  model: z.string().min(1).max(200).optional(),
  agent: agentName.optional(),
});
export type ForkInput = z.infer<typeof forkSchema>;

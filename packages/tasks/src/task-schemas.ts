/**
 * What a client may submit, what a task is, and what is stored and shown of it. Submissions are
 * validated with zod at the API; job payloads again when a worker picks them up.
 */
import { z } from 'zod';

import { AGENT_NAME, RETRY_LIMITS, WEBHOOK_EVENTS, type AgentPool } from '@agentq/contract';
import { checkPlan, type PlannedSubtask } from '@agentq/core';
import { INPUT_NAME_MAX_BYTES, INPUT_PATH_MAX_BYTES, inputName, inputPathProblem, shownPath } from './input-paths.js';
import { loneSurrogateProblem } from './well-formed-names.js';
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

/** A client's key (idempotency, concurrency): part of a Redis key's name, so well-formed (well-formed-names.ts). */
const clientKey = z
  .string()
  .min(1, 'must be a non-empty string')
  .max(256)
  .superRefine((value, context) => {
    const problem = loneSurrogateProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

/** An agent's name as a request gives it; whether the configuration has it is checked where that is known. */
const agentName = z.string().regex(AGENT_NAME, 'is not an agent name (a lower-case word)');

/** Where a task's events are sent, signed (Standard Webhooks), and which. */
export const webhookSchema = fieldsOnly({
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).max(2048),
  events: z
    .array(z.enum(WEBHOOK_EVENTS))
    .min(1, `name at least one of ${WEBHOOK_EVENTS.join(', ')}, or leave "events" out for the three endings`)
    .optional(),
});
export type WebhookInput = z.infer<typeof webhookSchema>;

/** Files a task may be given on submit: at most this many, of at most this many bytes together. */
export const INPUT_FILES_MAX = 100;
export const INPUT_BYTES_MAX = 5 * 1024 * 1024;

/** A path in a task's folder: relative, `/`-separated, no `.` or `..` part, no empty part, no NUL; in bytes. */
const inputPath = z
  .string()
  .superRefine((value, context) => {
    const problem = inputPathProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description: `A relative path in the task's folder (\`data/in.csv\`), well-formed Unicode (no lone UTF-16 surrogate): each name at most ${INPUT_NAME_MAX_BYTES} bytes in UTF-8, the whole at most ${INPUT_PATH_MAX_BYTES}.`,
  });

/** Base64 with its padding, checked in one linear pass (a grouped pattern backtracks past the stack on megabytes). */
const isBase64 = (text: string) => text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text);

/** Files placed in the task's folder before its first step (its subtasks' too): content in base64. */
export const inputFilesSchema = z
  .array(
    fieldsOnly({
      path: inputPath,
      content: z
        .string()
        .refine(isBase64, 'must be base64 (RFC 4648, with padding)')
        .transform((text): Buffer => Buffer.from(text, 'base64')),
    }),
  )
  .min(1, 'name at least one file, or leave "files" out')
  .max(INPUT_FILES_MAX, `at most ${INPUT_FILES_MAX} files`)
  .superRefine((files, context) => {
    const bytes = files.reduce((sum, file) => sum + file.content.length, 0);
    if (bytes > INPUT_BYTES_MAX)
      context.addIssue({
        code: 'custom',
        message: `hold ${bytes} bytes together, more than ${INPUT_BYTES_MAX}: give a task large data another way (a URL it fetches)`,
      });
    // Two spellings of one name (Unicode forms) are one file: given twice, or a file and a folder at once.
    const names = files.map((file) => inputName(file.path));
    const given = new Set(names);
    files.forEach((file, index) => {
      const twice = names.indexOf(names[index]!);
      if (twice !== index)
        context.addIssue({
          code: 'custom',
          path: [index, 'path'],
          message:
            files[twice]!.path === file.path
              ? `${shownPath(file.path)} is given twice: give each file once`
              : `${shownPath(file.path)} is given twice, as ${shownPath(files[twice]!.path)} too (the same name in another Unicode form): give each file once`,
        });
      const parts = names[index]!.split('/');
      for (let depth = 1; depth < parts.length; depth++) {
        const folder = parts.slice(0, depth).join('/');
        if (given.has(folder))
          context.addIssue({
            code: 'custom',
            path: [index, 'path'],
            message: `${shownPath(file.path)} is inside ${shownPath(folder)}, which is given as a file: a name is a file or a folder, not both`,
          });
      }
    });
  });
export type InputFile = { path: string; content: Buffer };

/** A submit's retry policy: bounded, so that no task retries without end, spins, or sleeps for days. */
export const retryPolicySchema = fieldsOnly({
  attempts: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1 (the first run)')
    .max(RETRY_LIMITS.maxAttempts, `must be at most ${RETRY_LIMITS.maxAttempts} (the most any task may have)`)
    .optional(),
  backoff: z
    .number()
    .min(
      RETRY_LIMITS.minBackoffSeconds,
      `must be at least ${RETRY_LIMITS.minBackoffSeconds} (seconds before the second attempt)`,
    )
    .max(
      RETRY_LIMITS.maxBackoffSeconds,
      `must be at most ${RETRY_LIMITS.maxBackoffSeconds} (seconds before the second attempt)`,
    )
    .optional(),
})
  .refine((retry) => retry.attempts !== undefined || retry.backoff !== undefined, {
    message: 'must name "attempts", "backoff" or both, or be left out',
  })
  .meta({
    description: `How its runs are tried again after an error: \`attempts\` in all (1 to ${RETRY_LIMITS.maxAttempts}, and at most its agent's \`retry.maxAttempts\`), \`backoff\` seconds before the second (${RETRY_LIMITS.minBackoffSeconds} to ${RETRY_LIMITS.maxBackoffSeconds}), doubling after. Left out: its agent's. An unreachable model endpoint spends no attempt.`,
  });

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

/** The most a prompt may hold, in UTF-8 bytes: characters of up to 4 bytes each do not pass it. */
export const MAX_PROMPT_BYTES = 200_000;

/** A prompt: text, trimmed, at most MAX_PROMPT_BYTES bytes; a longer one is refused with its size. */
const promptText = z
  .string()
  .trim()
  .min(1, 'must be a non-empty string')
  .superRefine((text, context) => {
    // Characters first: most prompts are far below, and counting bytes reads the text.
    if (text.length * 3 <= MAX_PROMPT_BYTES) return;
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_PROMPT_BYTES)
      context.addIssue({
        code: 'custom',
        message: `is ${bytes} bytes (UTF-8); a prompt is at most ${MAX_PROMPT_BYTES} bytes: give long inputs as files`,
      });
  });

export const taskInputSchema = fieldsOnly(
  {
    prompt: promptText,
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
    idempotencyKey: clientKey.optional(),
    /**
     * At most `concurrencyLimit` tasks of the tenant with this key run at once (default and most: the
     * tenant's `limits.perConcurrencyKey`, itself default 1); the others wait in submit order, holding no worker.
     */
    concurrencyKey: clientKey.optional(),
    concurrencyLimit: z.number().int().min(1).max(1_000).optional(),
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
     * How its runs (and its plan's subtasks') are tried again after an error that is not an outage of the
     * model endpoint (that waits, spending no attempt): `attempts` in all, `backoff` seconds before the
     * second, doubling after. What it leaves out is its agent's (`agents.<agent>.retry`); `attempts` at
     * most the agent's `retry.maxAttempts`.
     */
    retry: retryPolicySchema.optional(),
    /**
     * Where its events are sent (POSTed, signed per Standard Webhooks, retried for a day): `events` among
     * task.completed, task.failed, task.cancelled, task.waiting; default the three endings.
     */
    webhook: webhookSchema.optional(),
    /**
     * Files placed in its folder before its first step (and in each subtask's, for a planned task):
     * `[{path, content}]`, content in base64; at most 100 files and 5 MiB together.
     */
    files: inputFilesSchema.optional(),
    plan: givenPlanSchema.optional().meta({
      description:
        "The task's own plan, run instead of asking the planner model for one: each subtask runs in its agent's pool once every subtask it `need`s completed. Not with `agent`; never re-planned.",
    }),
  },
  ' (anything of your own goes in "metadata")',
).superRefine((task, context) => {
  if (task.concurrencyLimit !== undefined && task.concurrencyKey === undefined)
    context.addIssue({
      code: 'custom',
      path: ['concurrencyLimit'],
      message: 'limits the tasks of a concurrencyKey: name the key too',
    });
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
  prompt: promptText.optional(),
  model: z.string().min(1).max(200).optional(),
  agent: agentName.optional(),
});
export type ForkInput = z.infer<typeof forkSchema>;

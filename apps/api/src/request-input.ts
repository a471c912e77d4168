/** A request's body or query checked against its zod schema: a 400 that names each bad field, else the parsed value. */
import type { Request } from 'express';
import type { z } from 'zod';
import { ApiError } from './api-error.js';

/** The 400 for what `what` (the body, the query) got wrong: each bad field with its path, the first five said. */
export function invalid(error: z.ZodError, what: string): ApiError {
  // In the body's order (a task's problems together, task by task), whichever check found them.
  const details = [...error.issues]
    .sort((a, b) => comparePaths(a.path, b.path))
    .map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const summary = details
    .slice(0, 5)
    .map((detail) => `${detail.path || '(root)'}: ${detail.message}`)
    .join('; ');
  return new ApiError(
    'invalid_request',
    `${what} is invalid: ${summary}${details.length > 5 ? ` (and ${details.length - 5} more)` : ''}`,
    details,
  );
}

function comparePaths(a: readonly PropertyKey[], b: readonly PropertyKey[]): number {
  for (let index = 0; index < Math.min(a.length, b.length); index++) {
    const [left, right] = [a[index], b[index]];
    if (left === right) continue;
    if (typeof left === 'number' && typeof right === 'number') return left - right;
    // Keys of one object keep the order the checks found them in (the sort is stable).
    return typeof left === 'number' || typeof right === 'number' ? String(left).localeCompare(String(right)) : 0;
  }
  return a.length - b.length;
}

/** The query parsed with `schema`; a parameter given twice (`?a=1&a=2`) is refused as such, not read as a list. */
export function parsedQuery<Schema extends z.ZodType>(schema: Schema, request: Request): z.infer<Schema> {
  const repeated = Object.entries(request.query as Record<string, unknown>).find(([, value]) => Array.isArray(value));
  if (repeated)
    throw new ApiError(
      'invalid_request',
      `The query gives ${repeated[0]} ${(repeated[1] as unknown[]).length} times: give each parameter once.`,
    );
  const parsed = schema.safeParse(request.query);
  if (!parsed.success) throw invalid(parsed.error, 'The query');
  return parsed.data;
}

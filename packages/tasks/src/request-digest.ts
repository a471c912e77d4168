/**
 * What an idempotency key is bound to: the task as its client sent it. The digest covers every field of
 * the task but the key itself (prompt, agent, model, priority, plan, files, metadata, budget, retry,
 * webhook, concurrency key and limit), and the request's `batch`, as the schema parsed them (a trimmed prompt, a
 * plan's `need` left out as `[]`), in a canonical JSON: objects' keys sorted at every level, so the same
 * task written with its keys in another order is the same task. A field left out and a field given its
 * default value are two bodies. What the install adds (a tenant's default webhook, its concurrency
 * limit) is not the client's and is not in it: an operator's change never turns a retry into a mismatch.
 */
import { createHash } from 'node:crypto';
import { storedPlan, type TaskInput } from './task-schemas.js';

/** The SHA-256 (hex) of a task's canonical body, with the batch it was submitted in. */
export function taskDigest(input: TaskInput, batch: string | undefined): string {
  const { idempotencyKey: _key, files, plan, ...fields } = input;
  const body = {
    ...fields,
    // A file by its content's digest: hashing megabytes is fast, carrying them through JSON is not.
    ...(files ? { files: files.map((file) => ({ path: file.path, sha256: sha256(file.content) })) } : {}),
    ...(plan ? { plan: JSON.parse(storedPlan(plan)) as unknown } : {}),
    ...(batch !== undefined ? { batch } : {}),
  };
  return sha256(canonicalJson(body));
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** JSON with every object's keys in sorted order (arrays keep theirs); `undefined` fields left out. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const entries = Object.entries(value)
    .filter(([, inner]) => inner !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
}

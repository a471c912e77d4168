/**
 * A tenant's idempotency key as Redis keeps it: `<task id> <digest>`, the task it made and the digest of
 * the body that made it (the tasks package's request-digest.ts), with the retention as its TTL. A key
 * stored before keys held a digest is the task id alone: it matches any body, as it always did, until
 * it expires. CREATE (scripts/create.lua) checks the keys of one call; a submit stored over several
 * calls is checked whole first (`idempotencyMismatches`), so that a mismatch makes none of it.
 */
import { cellPipeline } from './cell-pipeline.js';
import type { Redis } from 'ioredis';
import type { CellKeys, Keys } from './keys.js';
import { execPipeline } from './pipeline-replies.js';
import type { IdempotencyMismatch } from './store-errors.js';

/** A key's value: the task, and the digest of its body when there is one. */
export function idempotencyValue(taskId: string, digest: string | undefined): string {
  return digest === undefined ? taskId : `${taskId} ${digest}`;
}

/** What a key's value names: its task, and the digest of its body (absent in a key stored before digests). */
export function parseIdempotencyValue(value: string): { taskId: string; digest?: string } {
  const [taskId, digest] = value.split(' ');
  return digest ? { taskId: taskId!, digest } : { taskId: taskId! };
}

/** A task of a submit that names an idempotency key, in the cell its key lives in. */
export interface KeyedTask {
  /** Its place in the request. */
  index: number;
  idempotencyKey: string;
  digest: string;
  cell: CellKeys;
}

/**
 * The tasks among `keyed` whose key names a live task made from another body. Two round trips: the keys,
 * then (only for keys whose digest differs) whether their tasks still exist; a key whose task was
 * deleted makes a new one.
 */
export async function idempotencyMismatches(
  store: { redis: Redis; keys: Keys },
  tenant: string,
  keyed: readonly KeyedTask[],
): Promise<IdempotencyMismatch[]> {
  if (!keyed.length) return [];
  const reads = cellPipeline(store.redis);
  for (const task of keyed) reads.get(task.cell.idempotency(tenant, task.idempotencyKey));
  const values = (await execPipeline(reads)) as Array<string | null>;
  const differing = keyed.flatMap((task, position) => {
    const value = values[position];
    if (!value) return [];
    const named = parseIdempotencyValue(value);
    return named.digest !== undefined && named.digest !== task.digest ? [{ task, taskId: named.taskId }] : [];
  });
  if (!differing.length) return [];
  const exists = cellPipeline(store.redis);
  for (const { taskId } of differing) exists.exists(store.keys.task(taskId));
  const live = (await execPipeline(exists)) as number[];
  return differing.flatMap(({ task, taskId }, position) =>
    live[position] === 1 ? [{ index: task.index, idempotencyKey: task.idempotencyKey, taskId }] : [],
  );
}

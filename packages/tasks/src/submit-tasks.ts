/**
 * A submission: its tasks stored, a script call per chunk of them, each task joining its tenant's list
 * for its pool in the same call (transitions.ts, CREATE): a stored task always gets its turn, whatever
 * happens to this process next. Then a turn of admission for each pool a chunk touched, so that an idle
 * pool starts at once: sent right behind the chunk, before its answer. Commands on one connection run in
 * the order sent, so the turn finds the chunk's tasks listed, a round trip sooner than once CREATE
 * answered (the store and the queues share the API's connection); on another connection the turn may
 * come first, and the tasks wait for the next (each worker takes one a second): later, never lost. A
 * turn asked for while one is under way is taken after it, and so finds the later chunks listed too.
 */
import { AgentqError } from '@agentq/contract';
import { randomUUID } from 'node:crypto';
import type { AgentQueues } from '@agentq/scheduling';
import { poolOf, storedPlan, type TaskInput } from './task-schemas.js';
import {
  CREATE_BATCH as CHUNK,
  createdBytes,
  IdempotencyMismatchError,
  idempotencyMismatches,
  inputFilesBytes,
  NoRoomError,
  type RoomLimits,
} from '@agentq/store';
import { keyCell, type SubmittedTask, type Transitions } from './transitions.js';

/** Some tasks could not be stored; the others that will not run were failed (`enqueue_failed`). */
export class EnqueueError extends AgentqError {
  readonly code = 'enqueue_failed';
  /** Redis refused or was away: the same submit can succeed later (keyed tasks are not created twice). */
  readonly retryable = true;
  constructor(
    message: string,
    /** What refused the first chunk that failed. */
    override readonly cause: unknown,
  ) {
    super(message);
  }
}

/**
 * `traceparents`: each task's trace context (with tracing on), in the order of `inputs`. With `room`, the
 * tasks are stored only if all fit in the tenant's limits (else NoRoomError, nothing stored): the first
 * chunk's call checks them and holds the room the others take (tenant-room.ts).
 */
export async function submitTasks(options: {
  transitions: Transitions;
  queues: AgentQueues;
  inputs: readonly TaskInput[];
  tenant: string;
  batch?: string | undefined;
  traceparents?: readonly string[];
  /** Each task's body's digest (request-digest.ts), in the order of `inputs`; given for those with an idempotency key. */
  digests?: ReadonlyArray<string | undefined>;
  room?: RoomLimits;
  /** The schedule that submits them. */
  scheduleId?: string | undefined;
}): Promise<SubmittedTask[]> {
  const { transitions, queues, inputs, tenant, batch, traceparents, digests, scheduleId } = options;
  const { keys } = transitions.store;
  // A chunk is one CREATE call, sent as `submit` is called.
  const chunks = Array.from({ length: Math.ceil(inputs.length / CHUNK) }, (_, index) => index * CHUNK);
  // One CREATE call refuses a key sent again with another body before it writes anything; a submit of
  // several calls is checked whole first, so that such a key makes none of it.
  if (chunks.length > 1 || keys.cells.length > 1) {
    const keyed = inputs.flatMap((input, index) => {
      const digest = digests?.[index];
      return input.idempotencyKey !== undefined && digest !== undefined
        ? [{ index, idempotencyKey: input.idempotencyKey, digest, cell: keyCell(keys, tenant, input)! }]
        : [];
    });
    const mismatches = await idempotencyMismatches(transitions.store, tenant, keyed);
    if (mismatches.length) throw new IdempotencyMismatchError(mismatches);
  }
  const admitted: Array<Promise<void>> = [];
  const submitId = randomUUID();
  // What all its tasks write when created, for a byte limit only (tenant-bytes.ts).
  const bytes =
    options.room?.bytes !== undefined
      ? inputs.reduce(
          (total, input) =>
            total +
            createdBytes({
              prompt: input.prompt,
              metadata: input.metadata && JSON.stringify(input.metadata),
              givenPlan: input.plan && storedPlan(input.plan),
            }) +
            inputFilesBytes(input.files),
          0,
        )
      : 0;
  // With several cells, the room for all of it is held at the install's home first (cell-room.ts), and
  // its chunks stored without one: else the first chunk's call checks it, and holds it for the others.
  const held =
    options.room && transitions.store.keys.cells.length > 1
      ? await transitions.store.holdRoom(tenant, inputs.length, bytes, options.room)
      : undefined;
  const stored = chunks.map((start) => {
    const chunk = inputs.slice(start, start + CHUNK);
    const room = !held &&
      options.room && {
        limits: options.room,
        claim: { id: submitId, tasks: inputs.length, bytes, first: start === 0 },
      };
    return transitions.submit(chunk, {
      tenant,
      batch,
      scheduleId,
      ...(traceparents ? { traceparents: traceparents.slice(start, start + CHUNK) } : {}),
      ...(digests ? { digests: digests.slice(start, start + CHUNK) } : {}),
      ...(room ? { room } : {}),
      // Right behind its CREATE, a turn for each of its pools (one under way takes another after it); it never fails.
      onSent: (tasks) => admitted.push(queues.admitListed(tasks)),
    });
  });
  const outcomes = await Promise.allSettled(stored);
  // The tasks' outcomes are what the caller hears; a hold that cannot be released ends with its TTL.
  await held?.release().catch(() => undefined);
  await Promise.all(admitted);
  // Tasks that name a concurrency key wait in its queue: a turn of each key lets through what has room.
  const concurrencyKeys = inputs.flatMap((input) => (input.concurrencyKey !== undefined ? [input.concurrencyKey] : []));
  if (concurrencyKeys.length) await queues.letThrough(tenant, concurrencyKeys);
  // No room: the first chunk stored nothing, and held nothing for the others, which stored nothing either.
  if (outcomes[0]?.status === 'rejected' && outcomes[0].reason instanceof NoRoomError) throw outcomes[0].reason;
  const failure = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failure) {
    // A key another submit stored, with another body, between the check above and its CREATE call.
    const refusals = outcomes.flatMap((outcome, chunk) =>
      outcome.status === 'rejected' && outcome.reason instanceof IdempotencyMismatchError
        ? [{ refusal: outcome.reason, start: chunks[chunk]! }]
        : [],
    );
    const mismatches = refusals.flatMap(({ refusal, start }) =>
      refusal.mismatches.map((mismatch) => ({ ...mismatch, index: start + mismatch.index })),
    );
    const message = mismatches.length
      ? `The submit was refused (409): ${new IdempotencyMismatchError(mismatches).message}`
      : `Could not store every task: ${(failure.reason as Error).message}`;
    // The client submits again: the tasks of the other chunks are failed (and taken out of their
    // tenant's list), but for those with an idempotency key, which stay queued for the retry to find.
    const tasks = [
      ...outcomes.flatMap((outcome, chunk) =>
        outcome.status === 'fulfilled'
          ? outcome.value.map((task, index) => ({ task, index: chunks[chunk]! + index }))
          : [],
      ),
      // (and what the other calls of a refused chunk stored)
      ...refusals.flatMap(({ refusal, start }) =>
        refusal.created.map(({ index, id }): { task: SubmittedTask; index: number } => {
          const input = inputs[start + index]!;
          return { task: { id, agent: poolOf(input), priority: input.priority ?? 5 }, index: start + index };
        }),
      ),
    ].map(({ task, index }) => ({ task, index, input: inputs[index]! }));
    const abandoned = tasks
      .filter(({ task, input }) => input.idempotencyKey === undefined && task.existing === undefined)
      .map(({ task }) => task);
    // Best effort, with the store failing already: the submit's own error is what the client hears, and a
    // task this could not fail stays in its tenant's list, where the client sees and may cancel it.
    await Promise.all(
      abandoned.map(async (task) => {
        await queues.of(task.id).admission.withdraw(task.agent, tenant, task.id);
        await transitions.fail(
          { id: task.id, tenant, listed: true },
          { from: ['queued'], error: { code: 'enqueue_failed', message } },
        );
      }),
    ).catch(() => undefined);
    const created = tasks.flatMap(({ task, index }) => (task.existing === undefined ? [{ index, id: task.id }] : []));
    if (mismatches.length) throw new IdempotencyMismatchError(mismatches, created);
    throw new EnqueueError(message, failure.reason);
  }
  return outcomes.flatMap((outcome) => (outcome as PromiseFulfilledResult<SubmittedTask[]>).value);
}

/**
 * The one place that decides how a job's run ends, whatever the job (an agent's task, a plan, a
 * planned task's end). A run claims its task under a new run token (a stale run can write nothing),
 * reading it in the same round trip, and gets the task's journal and an abort signal. Then:
 *
 * - a cancel was asked for before it started: the task ends cancelled, nothing runs;
 * - its tenant left the configuration file: the task fails, nothing runs (tenant-gone.ts);
 * - stopped by this worker's shutdown (the signal's reason): the task goes back to the queue and the
 *   job is delayed, without using an attempt; another worker resumes it from its journal;
 *
 * A run that must wait (the cases below: a shared limit, an outage or a 429, a retry's backoff) requeues
 * its task as due in its pool's due set, to run as its next job (`<task>-r<n>`) once admission lets it
 * back in by its tenant's turn (due-tasks.ts), and its job ends: a waiting task holds no queue slot, and
 * a batch that waited cannot come back ahead of another tenant's tasks. (A planned task's end, which
 * admission does not queue, waits as its job delayed.)
 *
 * - its model call must wait for the shared limits (models.<model>.limits): the task goes back to the queue
 *   until the call can fit, without using an attempt; its slot goes to another job;
 * - its model's endpoint cannot be reached, or answered 429 after the SDK's retries (for a model without
 *   shared limits; outage-guarded-model.ts): the task goes back to the queue and waits, without using an
 *   attempt, until the endpoint answers again (or its next try: after a 429, its Retry-After); its
 *   tenant's other calls of that model wait too, never another tenant's or another model's. Once it has
 *   waited longer than models.<model>.outage allows, `gave_up`, saying for how long; past
 *   models.<model>.outage.rateLimitedWaits 429s in a row, each further 429 spends an attempt (below);
 * - another error: back to the queue to be tried again after its retry policy's wait (retry-policy.ts;
 *   the record counts its failed runs), or, at its policy's last attempt, `gave_up` for the caller to
 *   record the failure;
 * - the run lost its task (a write refused: another worker took it over, or it ended without this
 *   run): it stops as such, writes nothing more, and the job ends (`lost`); not a cancel;
 * - otherwise what the run answered (a cancel included) is the caller's to record (`settle`).
 *
 * The run's `task.started`, and what its journal holds back, go out with its first write: the
 * outcome's transition takes them (`by.takeHeld`), and anything left is written when it ends.
 */
import { randomUUID } from 'node:crypto';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { retryDelayMs, type TaskStatus } from '@agentq/contract';
import { modelOutageFor } from '@agentq/config';
import { RunLostError, type RunLostReason } from '@agentq/core';
import type { LanguageModel } from '@agentq/llm';
import { dueMember, RetryLater } from '@agentq/scheduling';
import { CommitNotReplicated, type SpendingStop, type TaskRecord } from '@agentq/store';
import { createRedisJournal, type ByRun, type RedisJournal, type RequeueReason } from '@agentq/tasks';
import { CANCELLED, stoppedByShutdown } from './cancel-listener.js';
import type { JobContext } from './job-context.js';
import { WaitForRateLimit } from './rate-limited-model.js';
import { outageGuardedModel, WaitForModel } from './outage-guarded-model.js';
import { taskRetryPolicy } from './retry-policy.js';
import { failForGoneTenant } from './tenant-gone.js';

/** A run that must wait requeued its task as due (`waitAsDue`): its job ends without an outcome to record. */
class WaitsDue extends Error {}

export interface HeldTask {
  /** The run (its token, and what its journal held back for the outcome to take). */
  by: ByRun;
  /** The task as it was when the run claimed it. */
  record: TaskRecord;
  journal: RedisJournal;
  signal: AbortSignal;
  /** The model the task runs on: the one it named on submit (or its first run called), else its pool's. */
  model: LanguageModel;
  /**
   * Why the run should stop before its next model call, though nobody cancelled it: its root's budget
   * or its tenant's daily limit is spent (as of its claim or last commit).
   */
  spending(): SpendingStop | undefined;
}

/** How the run ended, for `settle` to record. */
export type RunEnd<T> = { ended: 'ran'; value: T } | { ended: 'gave_up'; message: string };

/**
 * The run did not hold its task: it moved on (ended, waiting, missing), or a cancel came first, or
 * the run lost it on the way (`lost`: another run took it over, or it ended without this one).
 */
export interface NotHeld {
  held: false;
  /** The task as it was (undefined when there is none). */
  record: TaskRecord | undefined;
  status: TaskStatus | undefined;
  cancelled: boolean;
  lost?: RunLostReason;
}

export async function holdTask<T, R>(options: {
  job: Job;
  token: string | undefined;
  context: JobContext;
  task: { taskId: string; tenant?: string | undefined };
  agent: string;
  /** Whether this run continues one that began before (for the `task.started` event). */
  resumed: (record: TaskRecord) => boolean;
  /** Say `task.started`. Default yes. */
  announce?: (record: TaskRecord) => boolean;
  run: (held: HeldTask) => Promise<T>;
  /**
   * Whether the job is the task's own run (an agent's, a plan's), which admission queues: a run that
   * must wait goes back through admission, as the task's next job. Default no: it waits as its job delayed.
   */
  readmit?: boolean;
  /** Records how the run ended (its transitions take `held.by`). */
  settle: (end: RunEnd<T>, held: HeldTask) => Promise<R>;
}): Promise<{ held: true; value: R } | NotHeld> {
  const { job, context } = options;
  const by: ByRun = { runToken: randomUUID(), agent: options.agent, worker: context.workerId };
  const readmit = options.readmit ?? false;
  const claim = await context.transitions.claim(
    { id: options.task.taskId, tenant: options.task.tenant },
    // A job a crashed worker left after its run requeued the task as its next job claims nothing.
    { ...by, model: context.model.modelId, job: readmit ? job.id : undefined },
  );
  // The task moved on meanwhile (cancelled, waiting for its user, ended): nothing to run.
  if (!claim.applied || !claim.record)
    return { held: false, record: claim.record, status: claim.status, cancelled: false };
  const record = claim.record;
  // This run's attempt: a task tried again after a wait runs as a new job, so its record counts the failed runs.
  const attempt = (readmit ? record.retries : 0) + job.attemptsMade + 1;
  if (!claim.cancelRequested && !context.tenantPresent(record.tenant))
    return { held: false, record, status: await failForGoneTenant(context, record, by), cancelled: false };
  const { controller, release } = context.cancels.register(record.id);
  const announce = !claim.cancelRequested && (options.announce?.(record) ?? true);
  const journal = createRedisJournal({
    store: context.store,
    taskId: record.id,
    tenant: record.tenant,
    agent: options.agent,
    worker: context.workerId,
    runToken: by.runToken,
    memory: claim.memory,
    heldEvents: announce
      ? [
          {
            type: 'task.started',
            at: new Date().toISOString(),
            agent: options.agent,
            worker: context.workerId,
            data: { attempt, resumed: options.resumed(record) },
          },
        ]
      : [],
    onCommit: (_entry, { cancelRequested, stop: reached }) => {
      if (cancelRequested) controller.abort(CANCELLED);
      stop = reached;
    },
  });
  let stop = claim.stop;
  // The job it runs as after a wait, and how the due set and the model's outages list it while it waits
  // (to wake it when the endpoint answers).
  const next = { jobId: `${record.id}-r${record.resumes + 1}`, resumes: record.resumes + 1 };
  const pool = job.queueName;
  const member = dueMember({
    pool,
    taskId: record.id,
    tenant: record.tenant,
    priority: record.priority,
    ...(readmit ? {} : { delayedJob: job.id! }),
  });
  const caller = { tenant: record.tenant, member };
  // Whether its model answered this run (its 429s in a row, record.rateLimits, start afresh).
  let answered = false;
  const model = outageGuardedModel(record.model ? context.models(record.model) : context.model, {
    outages: context.outages,
    caller,
    wake: context.wake,
    waitedBefore: record.outageSince !== undefined,
    answered: () => (answered = true),
  });
  const held: HeldTask = {
    by: { ...by, takeHeld: journal.takeHeld },
    record,
    journal,
    signal: controller.signal,
    model,
    spending: () => stop,
  };
  context.telemetry.runStarted({
    taskId: record.id,
    rootId: record.rootId,
    agent: options.agent,
    attempt,
    resumed: options.resumed(record),
    startedAt: Date.parse(record.startedAt ?? '') || Date.now(),
    promptTokens: record.promptTokens,
    completionTokens: record.completionTokens,
    announce,
    traceparent: record.traceparent,
    ...(context.config.AGENTQ_LOG_PROMPTS ? { prompt: record.prompt } : {}),
  });
  try {
    if (claim.cancelRequested) {
      await context.transitions.cancel(record, {
        ...held.by,
        from: ['running'],
        reason: 'cancelled before it started',
      });
      return { held: false, record, status: 'cancelled', cancelled: true };
    }
    const handBack = async (): Promise<never> => {
      await context.transitions.requeue(record, { ...held.by, why: { kind: 'handed_back' } });
      await job.moveToDelayed(Date.now(), options.token);
      throw new DelayedError();
    };
    /** The run must wait `ms`: its task is due then, back through admission as its next job (see above). */
    const waitAsDue = async (ms: number, why: RequeueReason, extra: DueExtra = {}): Promise<never> => {
      await context.transitions.requeue(record, {
        ...held.by,
        ...(extra.takeHeld ? { takeHeld: extra.takeHeld } : {}),
        ...(extra.rateLimits !== undefined ? { rateLimits: extra.rateLimits } : {}),
        why,
        next: {
          ...next,
          ...(extra.retries !== undefined ? { retries: extra.retries } : {}),
          due: { ...context.queues.of(record.id).admission.dueOf(pool), ms, member },
        },
      });
      throw new WaitsDue();
    };
    let end: RunEnd<T>;
    try {
      // In the run's span (with tracing on), as its settling: what they start (a plan's subtasks) joins the task's trace.
      const value = await context.telemetry.within(record.id, () => options.run(held));
      if (stoppedByShutdown(controller.signal)) await handBack();
      end = { ended: 'ran', value };
    } catch (error) {
      // Not confirmed by a replica: its job waits for them (job-handlers.ts), not a requeue that needs one too.
      if (error instanceof DelayedError || error instanceof CommitNotReplicated || error instanceof WaitsDue)
        throw error;
      // The task is not this run's any more: nothing it would write as its end can land (and a requeue
      // or failure written now would be refused the same way). Its job ends here.
      if (error instanceof RunLostError) {
        journal.takeHeld();
        return {
          held: false,
          record,
          status: error.status as TaskStatus | undefined,
          cancelled: false,
          lost: error.reason,
        };
      }
      if (stoppedByShutdown(controller.signal)) await handBack();
      // The call it announced (held back, not yet written) never went out, or its failure is what the
      // requeue says: it is not said.
      const unsent = () => {
        const write = journal.takeHeld();
        return write && { ...write, events: write.events.filter((event) => event.type !== 'llm.request') };
      };
      if (error instanceof WaitForRateLimit) {
        // Its slot goes to a task that can run; it comes back when its call can fit.
        const why: RequeueReason = {
          kind: 'rate_limited',
          message: error.message,
          notBefore: new Date(error.retryAt).toISOString(),
        };
        if (readmit) await waitAsDue(error.retryAt - Date.now(), why, { takeHeld: unsent });
        await context.transitions.requeue(record, { ...held.by, takeHeld: unsent, why });
        await job.moveToDelayed(error.retryAt, options.token);
        throw new DelayedError();
      }
      // Its 429s in a row so far: none once its model answered this run.
      const rateLimits = answered ? 0 : record.rateLimits;
      const ending = {
        record,
        job,
        token: options.token,
        context,
        held,
        agent: options.agent,
        attempt,
        rateLimits,
        waitAsDue: readmit ? waitAsDue : undefined,
      };
      end = {
        ended: 'gave_up',
        message:
          error instanceof WaitForModel
            ? await waitForModel(error, { ...ending, caller, unsent, rateLimits })
            : await retryOrGiveUp(error, { ...ending, rateLimits }),
      };
    }
    return { held: true, value: await context.telemetry.within(record.id, () => options.settle(end, held)) };
  } catch (error) {
    // Requeued to wait: its job ends here; its next job runs it.
    if (error instanceof WaitsDue) return { held: false, record, status: 'queued', cancelled: false };
    throw error;
  } finally {
    // Left by a run that ended without a transition of its own (a plan started): written now.
    await journal.flush().catch(() => undefined);
    release();
    context.telemetry.runReleased(record.id);
  }
}

/** What a run's ending needs: its task, job and run, which attempt it is, and how it waits as due (readmitted jobs). */
interface Ending {
  record: TaskRecord;
  job: Job;
  token: string | undefined;
  context: JobContext;
  held: HeldTask;
  agent: string;
  attempt: number;
  /** Its 429s in a row so far (a 429 now is counted by waitForModel), kept for its next run to count on. */
  rateLimits: number;
  waitAsDue: ((ms: number, why: RequeueReason, extra?: DueExtra) => Promise<never>) | undefined;
}

/** What a requeue as due carries besides its reason: the call it held back, its failed runs, its 429s in a row. */
interface DueExtra {
  takeHeld?: ByRun['takeHeld'];
  retries?: number;
  rateLimits?: number;
}

/**
 * A run that failed otherwise: its task goes back to the queue to be tried again after its retry
 * policy's wait (its submit's, else its agent's), or, at the policy's last attempt, answers the
 * message its task fails with.
 */
async function retryOrGiveUp(error: unknown, options: Ending): Promise<string> {
  const { job, attempt } = options;
  const message = (error as Error).message;
  // The same error every time (UnrecoverableError; a RangeError: a stack or a string past V8's
  // bounds): the task fails now, not after more paid attempts.
  if (error instanceof UnrecoverableError || error instanceof RangeError) return message;
  // Within what its job allows too (a job queued by an older version allows 3).
  const policy = taskRetryPolicy(options.record, options.context.config, options.agent);
  if (attempt >= Math.min(policy.attempts, job.opts.attempts ?? 1)) return message;
  const delayMs = retryDelayMs(policy, attempt);
  const why: RequeueReason = {
    kind: 'retry',
    retry: attempt + 1,
    message,
    notBefore: new Date(Date.now() + delayMs).toISOString(),
  };
  const { rateLimits } = options;
  // (`attempt` counts the record's failed runs and this job's: the next job starts with none of its own)
  await options.waitAsDue?.(delayMs, why, { retries: attempt, rateLimits });
  await options.context.transitions.requeue(options.record, { ...options.held.by, rateLimits, why });
  throw new RetryLater(message, delayMs, { cause: error });
}

/**
 * A run whose model's endpoint cannot be reached, or answered 429: its task goes back to the queue, and
 * its job waits (no attempt used) until the endpoint answers (it is woken) or its next try, at the
 * latest; or, once the task has waited past models.<model>.outage.failAfterMinutes in this outage,
 * answers the message its task fails with. A 429 past models.<model>.outage.rateLimitedWaits in a row
 * spends an attempt instead (retryOrGiveUp): a prompt the provider refuses with 429 every time ends.
 */
async function waitForModel(
  error: WaitForModel,
  options: Ending & { caller: { tenant: string; member: string }; unsent: ByRun['takeHeld'] },
): Promise<string> {
  const { record, job, context } = options;
  const { until, since: outage, now } = error.wait;
  const settings = modelOutageFor(context.config, error.model);
  const rateLimits = error.drew429 ? options.rateLimits + 1 : options.rateLimits;
  // It tries the endpoint no more (for now): when it was the one to try next, a waiter takes that over.
  const leave = async () => {
    const waiter = await context.outages.left({ ...options.caller, model: error.model });
    await context.wake(waiter ? [waiter] : []);
  };
  if (error.drew429 && rateLimits > settings.rateLimitedWaits) {
    await leave();
    const message =
      `The model ${error.model} answered 429 (rate limited) ${rateLimits} times in a row; past ` +
      `models.${error.model}.outage.rateLimitedWaits (${settings.rateLimitedWaits}) each 429 spends an attempt. ` +
      `Raise the provider's limits for this key, shorten the prompt if it is too large for them, set ` +
      `models.${error.model}.limits for agentq to pace the calls, or give the task more attempts (retry.attempts): ` +
      error.lastError;
    return retryOrGiveUp(new Error(message, { cause: error }), { ...options, rateLimits });
  }
  // Its wait began at its first failure in this outage (a wait in an earlier outage does not count).
  const since = record.outageEpisode === outage && record.outageSince ? record.outageSince : now;
  const failAt = since + settings.failAfterMs;
  if (now >= failAt) {
    await leave();
    return error.rateLimited
      ? `The model ${error.model} answered 429 (rate limited) for ${duration(now - since)} (models.${error.model}.outage.failAfterMinutes): ${error.lastError}`
      : `The model endpoint of ${error.model} was unreachable for ${duration(now - since)} (models.${error.model}.outage.failAfterMinutes): ${error.lastError}`;
  }
  const wakeAt = Math.min(until, failAt);
  const why: RequeueReason = {
    kind: 'model_unreachable',
    message: error.message,
    notBefore: new Date(wakeAt).toISOString(),
    since,
    outage,
    rateLimited: error.rateLimited,
  };
  // (Redis's clock said when: the due set counts from it too)
  await options.waitAsDue?.(Math.max(0, wakeAt - now), why, { takeHeld: options.unsent, rateLimits });
  await context.transitions.requeue(record, { ...options.held.by, takeHeld: options.unsent, rateLimits, why });
  // Redis's clock said when; the delay is counted from this process's.
  await job.moveToDelayed(Date.now() + Math.max(0, wakeAt - now), options.token);
  throw new DelayedError();
}

/** A wait as a person reads it: seconds under two minutes, else minutes. */
function duration(ms: number): string {
  return ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

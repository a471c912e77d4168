/**
 * Sends webhook deliveries (every worker runs one): claims due ones with a lease, POSTs each signed
 * (Standard Webhooks) to its task's URL, and writes the outcome: delivered on a 2xx; else due again
 * after the next delay of the retry schedule, until it runs out (failed). Targets pass http_fetch's
 * egress rules (no loopback or private address, no redirect) unless private ones are allowed.
 *
 * Tenants share the sender fairly: each attempt goes on by itself (a free slot is claimed again at once,
 * no batch waits for its slowest), at most `perTenant` of a tenant's at once, claimed in turns between
 * tenants. A tenant whose receiver is slow, or never answers, holds its own share and no more.
 *
 * The body is `{type, timestamp, data}`: the event, when it happened, and the task as
 * `GET /v1/tasks/:id` shows it when the attempt is made, bounded (webhook-body.ts). It is built when the
 * attempt starts, from the task read then with its result cut in Redis (a result of megabytes never
 * reaches the worker), and an attempt in flight holds only its body.
 */
import { WEBHOOK_TEXT_LIMIT } from '@agentq/contract';
import type { ClaimedDelivery, StoredDelivery, TaskStore, WebhookDeliveries } from '@agentq/store';
import type { Logger, Metrics } from '@agentq/telemetry';
import { blockedCause, blockedDestinations, checkedLookup } from '@agentq/tools';
import { isIP } from 'node:net';
import { Agent, fetch } from 'undici';
import { webhookBody } from './webhook-body.js';
import { webhookHeaders } from './webhook-signature.js';

/** What a delivery keeps of a task's result, cut in Redis: its head and tail bytes (WEBHOOK_TEXT_LIMIT together). */
const RESULT_CUT = { headBytes: (WEBHOOK_TEXT_LIMIT * 3) / 4, tailBytes: WEBHOOK_TEXT_LIMIT / 4 };

export interface WebhookSenderOptions {
  deliveries: WebhookDeliveries;
  store: TaskStore;
  /** The secret a tenant's deliveries are signed with; undefined: none (they fail, said). */
  secretOf: (tenant: string) => string | undefined;
  /** The delays between attempts (AGENTQ_WEBHOOK_RETRY_SCHEDULE): one more attempt after each. */
  schedule: readonly number[];
  /** Let targets be on loopback and private addresses (AGENTQ_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Addresses of agentq's own services (Redis), refused like private ones. */
  serviceAddresses?: readonly string[];
  logger: Logger;
  metrics: Metrics;
  /** How long one attempt may take (AGENTQ_WEBHOOK_TIMEOUT). Default 15 s. */
  timeoutMs?: number;
  /**
   * How often due deliveries are looked for when nothing said one was added (a worker's own commits and
   * the API's notices do). Default 5 s.
   */
  pollMs?: number;
  /** Deliveries sent at once. Default 64. */
  concurrency?: number;
  /** One tenant's deliveries sent at once, at most: its share. Default 8. */
  perTenant?: number;
}

export interface WebhookSender {
  /** A delivery may have been added: look now. */
  nudge(): void;
  stop(): Promise<void>;
}

export function startWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const pollMs = options.pollMs ?? 5_000;
  const concurrency = options.concurrency ?? 64;
  const perTenant = options.perTenant ?? 8;
  const blocked = options.allowPrivate ? undefined : blockedDestinations(options.serviceAddresses);
  const agent = new Agent({
    ...(blocked ? { connect: { lookup: checkedLookup(blocked) } } : {}),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  let stopped = false;
  const stopping = new AbortController();
  const wakeUp = wakeable();

  /** One attempt: the receiver's status, or why none came. */
  const post = async (url: string, headers: Record<string, string>, body: Buffer) => {
    const target = new URL(url);
    const literal = target.hostname.replace(/^\[|\]$/g, '');
    if (blocked && isIP(literal) && blocked(literal))
      return { error: `${literal} is not on the public internet (AGENTQ_WEBHOOK_ALLOW_PRIVATE=true allows it)` };
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { ...headers, 'user-agent': 'agentq-webhooks' },
        body,
        redirect: 'manual',
        dispatcher: agent,
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stopping.signal]),
      });
      // The receiver's body is never read: only its status counts, and a body that cannot be cancelled is dropped
      // with its connection.
      await response.body?.cancel().catch(() => undefined);
      const ok = response.status >= 200 && response.status < 300;
      return {
        statusCode: response.status,
        ...(ok
          ? {}
          : {
              error:
                response.status >= 300 && response.status < 400
                  ? 'redirects are not followed'
                  : `answered ${response.status}`,
            }),
      };
    } catch (error) {
      const refused = blockedCause(error);
      if (refused) return { error: `${refused.message} (AGENTQ_WEBHOOK_ALLOW_PRIVATE=true allows it)` };
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const name = (error as Error).name;
      return {
        error:
          name === 'TimeoutError'
            ? `no answer within ${timeoutMs} ms`
            : (cause?.code ?? cause?.message ?? (error as Error).message),
      };
    }
  };

  /** What an attempt sends: its task read now, its body built; undefined when the task or its webhook is gone. */
  const attemptOf = async (taskId: string, delivery: StoredDelivery) => {
    const read = await options.store.getCut(taskId, RESULT_CUT);
    if (!read?.task.webhook) return undefined;
    const { task, resultBytes, resultCut } = read;
    const timestamp = new Date(delivery.createdAt).toISOString();
    const body = webhookBody({ type: delivery.event, timestamp, task, resultBytes, resultCut });
    return { url: read.task.webhook.url, tenant: task.tenant, body };
  };

  const deliver = async ({ id, tenant }: ClaimedDelivery) => {
    const found = await options.deliveries.read(id);
    if (!found) return options.deliveries.drop(id, tenant);
    const { taskId, delivery } = found;
    if (delivery.state) return options.deliveries.drop(id, tenant);
    const attempt = await attemptOf(taskId, delivery);
    if (!attempt) return options.deliveries.drop(id, tenant);
    const secret = options.secretOf(attempt.tenant);
    const started = Date.now();
    const outcome: { statusCode?: number; error?: string } = secret
      ? await post(attempt.url, webhookHeaders(secret, id, attempt.body), attempt.body)
      : { error: 'no signing secret: set AGENTQ_WEBHOOK_SECRET, or the tenant’s webhook.secret' };
    if (stopping.signal.aborted) return; // Its lease runs out: another sender tries again.
    const thisAttempt = { at: started, ms: Date.now() - started, ...outcome };
    const delivered = outcome.error === undefined;
    let tries = 0;
    let last = false;
    // Made from the state stored now: this attempt is added to every one recorded so far.
    await options.deliveries.update(taskId, tenant, id, (current) => {
      tries = (current.tries ?? 0) + 1;
      // 410 Gone: the receiver says the endpoint is no more (Standard Webhooks); no more attempts.
      last = !delivered && (tries > options.schedule.length || outcome.statusCode === 410 || !secret);
      return {
        event: current.event,
        createdAt: current.createdAt,
        attempts: [...(current.attempts ?? []), thisAttempt],
        tries,
        ...(delivered ? { state: 'delivered' as const } : last ? { state: 'failed' as const } : {}),
        ...(!delivered && !last ? { nextAt: Date.now() + withJitter(options.schedule[tries - 1]!) } : {}),
      };
    });
    options.metrics.webhookDeliveries.inc({ outcome: delivered ? 'delivered' : last ? 'failed' : 'retrying' });
    if (!delivered)
      options.logger.warn(
        { taskId, delivery: id, attempt: tries, error: outcome.error },
        last ? 'webhook delivery failed for good' : 'webhook delivery failed; it is tried again',
      );
  };

  // The attempts under way, and how many of each tenant's.
  const sending = new Set<Promise<void>>();
  const sendingOf = new Map<string, number>();
  const send = (claimed: ClaimedDelivery) => {
    sendingOf.set(claimed.tenant, (sendingOf.get(claimed.tenant) ?? 0) + 1);
    const attempt: Promise<void> = deliver(claimed)
      .catch((error: unknown) => options.logger.error({ err: error, delivery: claimed.id }, 'sending a webhook failed'))
      .finally(() => {
        sending.delete(attempt);
        const left = (sendingOf.get(claimed.tenant) ?? 1) - 1;
        if (left) sendingOf.set(claimed.tenant, left);
        else sendingOf.delete(claimed.tenant);
        wakeUp.wake(); // A slot is free: claim again.
      });
    sending.add(attempt);
  };

  const loop = async () => {
    while (!stopped) {
      let nextDue: number | undefined;
      const free = concurrency - sending.size;
      if (free > 0) {
        try {
          const found = await options.deliveries.claimDue({
            count: free,
            leaseMs: timeoutMs + 15_000,
            roomOf: (tenant) => perTenant - (sendingOf.get(tenant) ?? 0),
          });
          for (const claimed of found.claimed) if (!stopped) send(claimed);
          nextDue = found.nextDue;
        } catch (error) {
          options.logger.debug({ err: error }, 'looking for due webhooks failed');
        }
      }
      // Until an attempt ends (a slot is free), a delivery is added, the soonest is due, or the next poll.
      await wakeUp.wait(nextDue === undefined ? pollMs : Math.min(pollMs, Math.max(10, nextDue - Date.now())));
    }
  };
  const running = loop();

  return {
    nudge: () => wakeUp.wake(),
    stop: async () => {
      stopped = true;
      stopping.abort();
      wakeUp.wake();
      await running;
      await Promise.all(sending);
      // Stopping: connections still open are dropped with the process.
      await agent.close().catch(() => undefined);
    },
  };
}

/** A wait that a wake ends, or that returns at once when a wake came since the last one. */
function wakeable() {
  let woken = false;
  let end: (() => void) | undefined;
  return {
    wake() {
      woken = true;
      end?.();
    },
    async wait(ms: number) {
      if (!woken)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => end?.(), ms);
          end = () => {
            clearTimeout(timer);
            end = undefined;
            resolve();
          };
        });
      woken = false;
    },
  };
}

/** A delay with up to a tenth more, so that receivers that were down together are not all retried at once. */
function withJitter(ms: number): number {
  return Math.round(ms * (1 + Math.random() * 0.1));
}

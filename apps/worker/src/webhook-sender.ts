/**
 * Sends webhook deliveries (every worker runs one): claims due ones with a lease, POSTs each signed
 * (Standard Webhooks) to its task's URL, and writes the outcome: delivered on a 2xx; else due again
 * after the next delay of the retry schedule, until it runs out (failed). Targets pass http_fetch's
 * egress rules (no loopback or private address, no redirect) unless private ones are allowed.
 *
 * The body is `{type, timestamp, data}`: the event, when it happened, and the task as
 * `GET /v1/tasks/:id` shows it when the attempt is made.
 */
import type { WebhookEvent, WebhookPayload } from '@agentq/contract';
import type { StoredDelivery, TaskStore, WebhookDeliveries } from '@agentq/store';
import type { Logger, Metrics } from '@agentq/telemetry';
import { blockedCause, blockedDestinations, checkedLookup } from '@agentq/tools';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch } from 'undici';
import { webhookHeaders } from './webhook-signature.js';

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
  /** How long one attempt may take. Default 15 s. */
  timeoutMs?: number;
  /**
   * How often due deliveries are looked for when nothing said one was added (a worker's own commits and
   * the API's notices do). Default 5 s.
   */
  pollMs?: number;
  /** Deliveries sent at once. Default 16. */
  concurrency?: number;
}

export interface WebhookSender {
  /** A delivery may have been added: look now. */
  nudge(): void;
  stop(): Promise<void>;
}

export function startWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const pollMs = options.pollMs ?? 5_000;
  const concurrency = options.concurrency ?? 16;
  const blocked = options.allowPrivate ? undefined : blockedDestinations(options.serviceAddresses);
  const agent = new Agent({
    ...(blocked ? { connect: { lookup: checkedLookup(blocked) } } : {}),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  let stopped = false;
  let wake: AbortController = new AbortController();
  const stopping = new AbortController();

  /** One attempt: the receiver's status, or why none came. */
  const post = async (url: string, headers: Record<string, string>, body: string) => {
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

  const deliver = async (id: string) => {
    const found = await options.deliveries.read(id);
    if (!found) return options.deliveries.drop(id);
    const { taskId, delivery } = found;
    if (delivery.state) return options.deliveries.drop(id);
    const task = await options.store.get(taskId);
    if (!task?.webhook) return options.deliveries.drop(id);
    const secret = options.secretOf(task.tenant);
    const started = Date.now();
    let outcome: { statusCode?: number; error?: string };
    if (!secret) {
      outcome = { error: 'no signing secret: set AGENTQ_WEBHOOK_SECRET, or the tenant’s webhook.secret' };
    } else {
      const payload: WebhookPayload = {
        type: delivery.event as WebhookEvent,
        timestamp: new Date(delivery.createdAt).toISOString(),
        data: task,
      };
      const body = JSON.stringify(payload);
      outcome = await post(task.webhook.url, webhookHeaders(secret, id, body), body);
    }
    if (stopping.signal.aborted) return; // Its lease runs out: another sender tries again.
    const tries = (delivery.tries ?? 0) + 1;
    const attempts = [...(delivery.attempts ?? []), { at: started, ms: Date.now() - started, ...outcome }];
    const delivered = outcome.error === undefined;
    // 410 Gone: the receiver says the endpoint is no more (Standard Webhooks); no more attempts.
    const last = !delivered && (tries > options.schedule.length || outcome.statusCode === 410 || !secret);
    const next: StoredDelivery = {
      event: delivery.event,
      createdAt: delivery.createdAt,
      attempts,
      tries,
      ...(delivered ? { state: 'delivered' as const } : last ? { state: 'failed' as const } : {}),
      ...(!delivered && !last ? { nextAt: Date.now() + withJitter(options.schedule[tries - 1]!) } : {}),
    };
    await options.deliveries.record(taskId, id, next);
    options.metrics.webhookDeliveries.inc({ outcome: delivered ? 'delivered' : last ? 'failed' : 'retrying' });
    if (!delivered)
      options.logger.warn(
        { taskId, delivery: id, attempt: tries, error: outcome.error },
        last ? 'webhook delivery failed for good' : 'webhook delivery failed; it is tried again',
      );
  };

  const loop = async () => {
    while (!stopped) {
      let claimed: string[] = [];
      let nextDue: number | undefined;
      try {
        ({ ids: claimed, nextDue } = await options.deliveries.claimDue(concurrency, timeoutMs + 15_000));
        await Promise.all(
          claimed.map((id) =>
            deliver(id).catch((error: unknown) =>
              options.logger.error({ err: error, delivery: id }, 'sending a webhook failed'),
            ),
          ),
        );
      } catch (error) {
        options.logger.debug({ err: error }, 'looking for due webhooks failed');
      }
      if (claimed.length) continue;
      const waitMs = nextDue === undefined ? pollMs : Math.min(pollMs, Math.max(10, nextDue - Date.now()));
      wake = new AbortController();
      await sleep(waitMs, undefined, { signal: AbortSignal.any([wake.signal, stopping.signal]) }).catch(
        () => undefined,
      );
    }
  };
  const running = loop();

  return {
    nudge: () => wake.abort(),
    stop: async () => {
      stopped = true;
      stopping.abort();
      await running;
      await agent.close().catch(() => undefined);
    },
  };
}

/** A delay with up to a tenth more, so that receivers that were down together are not all retried at once. */
function withJitter(ms: number): number {
  return Math.round(ms * (1 + Math.random() * 0.1));
}

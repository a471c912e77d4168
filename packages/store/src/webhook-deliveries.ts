/**
 * Webhook deliveries as Redis keeps them. The commit that changes a task's status adds the delivery
 * its webhook asks for (commit.lua), in the same write: a hash field of the task's `webhooks` key, due
 * now in `webhooksDue` and not ended in `webhooksPending`. Senders (every worker) claim due ones with a
 * lease, so a sender that dies mid-attempt leaves it to be tried again by another, with
 * the same id: delivery is at least once, and survives any process's restart.
 */
import type { DeliveryView, WebhookEvent } from '@agentq/contract';
import type { Redis } from 'ioredis';
import { claimDue } from './claim-due.js';
import { publish } from './pub-sub.js';
import { luaScript } from './lua-script.js';
import type { Keys } from './keys.js';

/** One attempt as stored: when, the receiver's status or why none, how long. */
interface StoredAttempt {
  at: number;
  statusCode?: number;
  error?: string;
  ms: number;
}

/** A delivery as stored (times in ms since the epoch). */
export interface StoredDelivery {
  event: WebhookEvent;
  createdAt: number;
  attempts?: StoredAttempt[];
  /** Absent while pending. */
  state?: 'delivered' | 'failed';
  nextAt?: number;
  /** Attempts made since it was created or last resent: where it is in the retry schedule. */
  tries?: number;
}

const RECORD = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'record-delivery',
  keys: ['webhooksKey', 'webhooksDueKey', 'webhooksPendingKey'],
  args: ['id', 'deliveryJson', 'nextAt', 'resent'],
});

/** The attempts a delivery keeps (a resent one's oldest go first). */
const KEPT_ATTEMPTS = 50;

/** The task a delivery id names: `msg_<taskId>_<seq>`. */
export function deliveryTask(id: string): string | undefined {
  const match = /^msg_(.+)_\d+$/.exec(id);
  return match?.[1];
}

export class WebhookDeliveries {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /**
   * Up to `count` due deliveries, each out of the other senders' reach for `leaseMs`; with none due, when
   * the soonest is (ms since the epoch; undefined when there is none).
   */
  async claimDue(count: number, leaseMs: number): Promise<{ ids: string[]; nextDue?: number }> {
    // Each cell's due deliveries, up to `count` in all.
    const ids: string[] = [];
    for (const cell of this.keys.cells) {
      if (ids.length >= count) return { ids };
      ids.push(
        ...(await claimDue(this.redis, cell.webhooksDue, { now: Date.now(), count: count - ids.length, leaseMs })),
      );
    }
    if (ids.length) return { ids };
    const soonest = await Promise.all(
      this.keys.cells.map(async (cell) => (await this.redis.zrange(cell.webhooksDue, 0, 0, 'WITHSCORES'))[1]),
    );
    const due = soonest.filter((at) => at !== undefined).map(Number);
    return { ids, ...(due.length ? { nextDue: Math.min(...due) } : {}) };
  }

  /** Tells every sender a delivery was added or resent (they look at once; else at their next poll). */
  async notify(): Promise<void> {
    await publish(this.redis, this.keys.webhooksChannel, '1');
  }

  async read(id: string): Promise<{ taskId: string; delivery: StoredDelivery } | undefined> {
    const taskId = deliveryTask(id);
    if (!taskId) return undefined;
    const text = await this.redis.hget(this.keys.webhooks(taskId), id);
    return text ? { taskId, delivery: JSON.parse(text) as StoredDelivery } : undefined;
  }

  /** A delivery whose task (or record) is gone: out of the sets. */
  async drop(id: string): Promise<void> {
    const taskId = deliveryTask(id);
    // An id that names no task is dropped from wherever it is.
    const cells = taskId ? [this.keys.cellOf(taskId)] : this.keys.cells;
    await Promise.all(
      cells.map((cell) => this.redis.multi().zrem(cell.webhooksDue, id).zrem(cell.webhooksPending, id).exec()),
    );
  }

  /**
   * Writes an attempt's outcome: due again at `delivery.nextAt` while pending, else out of the sets.
   * Written only while the task's deliveries exist (a deleted task's stay deleted).
   */
  async record(taskId: string, id: string, delivery: StoredDelivery, resent = false): Promise<boolean> {
    const kept = { ...delivery, attempts: (delivery.attempts ?? []).slice(-KEPT_ATTEMPTS) };
    const pending = !kept.state && kept.nextAt !== undefined;
    const written = await RECORD.run(this.redis, {
      keys: {
        webhooksKey: this.keys.webhooks(taskId),
        webhooksDueKey: this.keys.cellOf(taskId).webhooksDue,
        webhooksPendingKey: this.keys.cellOf(taskId).webhooksPending,
      },
      args: { id, deliveryJson: JSON.stringify(kept), nextAt: pending ? kept.nextAt! : '', resent: resent ? '1' : '0' },
    });
    return written === 1;
  }

  /** A task's deliveries, oldest first, as the API shows them (`url`: the task's webhook). */
  async list(taskId: string, url: string): Promise<DeliveryView[]> {
    const hash = await this.redis.hgetall(this.keys.webhooks(taskId));
    return Object.entries(hash)
      .map(([id, text]) => deliveryView(id, JSON.parse(text) as StoredDelivery, url))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /**
   * Sends a delivery again, with the same id, now (and, should it fail, on the whole schedule again).
   * Answers false when the task has no such delivery.
   */
  async resend(taskId: string, id: string, url: string): Promise<DeliveryView | undefined> {
    const text = await this.redis.hget(this.keys.webhooks(taskId), id);
    if (!text) return undefined;
    const stored = JSON.parse(text) as StoredDelivery;
    // Due now, its retry schedule started over; its attempts so far are kept.
    const again: StoredDelivery = { ...stored, nextAt: Date.now(), tries: 0 };
    delete again.state;
    if (!(await this.record(taskId, id, again, true))) return undefined;
    await this.notify();
    return deliveryView(id, again, url);
  }

  /** How long the oldest delivery not ended has waited, in ms (0 when none waits). */
  async oldestPendingMs(): Promise<number> {
    const oldest = await Promise.all(
      this.keys.cells.map(async (cell) => (await this.redis.zrange(cell.webhooksPending, 0, 0, 'WITHSCORES'))[1]),
    );
    const scores = oldest.filter((score) => score !== undefined).map(Number);
    return scores.length ? Math.max(0, Date.now() - Math.min(...scores)) : 0;
  }
}

function deliveryView(id: string, delivery: StoredDelivery, url: string): DeliveryView {
  const state = delivery.state ?? 'pending';
  return {
    id,
    event: delivery.event,
    url,
    state,
    createdAt: new Date(delivery.createdAt).toISOString(),
    nextAttemptAt: state === 'pending' ? new Date(delivery.nextAt ?? delivery.createdAt).toISOString() : null,
    attempts: (delivery.attempts ?? []).map((attempt) => ({
      at: new Date(attempt.at).toISOString(),
      statusCode: attempt.statusCode ?? null,
      error: attempt.error ?? null,
      durationMs: attempt.ms,
    })),
  };
}

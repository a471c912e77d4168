/**
 * Webhook deliveries as Redis keeps them. The commit that changes a task's status adds the delivery
 * its webhook asks for (commit.lua), in the same write: a hash field of the task's `webhooks` key, due
 * now in its tenant's due set (its tenant then in `webhookTenants`) and not ended in `webhooksPending`.
 * Senders (every worker) claim due ones with a lease, in turns between tenants, so a sender that dies
 * mid-attempt leaves it to be tried again by another, with the same id: delivery is at least once, and
 * survives any process's restart; and a tenant with thousands due is claimed as often as one with one.
 */
import type { DeliveryView, WebhookEvent } from '@agentq/contract';
import type { Redis } from 'ioredis';
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

const CLAIM = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'claim-deliveries',
  keys: ['tenantsKey', 'leasedKey'],
  args: ['now', 'leaseUntil', 'count'],
});

/** A delivery a sender claimed: its id, and the tenant whose due set it was in. */
export interface ClaimedDelivery {
  id: string;
  tenant: string;
}

const RECORD = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'record-delivery',
  keys: ['webhooksKey', 'webhooksDueKey', 'webhookTenantsKey', 'webhooksPendingKey', 'webhooksLeasedKey'],
  args: ['id', 'tenant', 'deliveryJson', 'nextAt', 'resent', 'expectedJson', 'now'],
});

/** What a write of a delivery's state did: written; gone (its task's deliveries were deleted); under way (a resend while an attempt holds its lease). */
export type DeliveryWrite = 'written' | 'gone' | 'under_way';

/** A resend: the delivery as it is now due; none such; or refused while an attempt of it is under way. */
export type ResendOutcome =
  { outcome: 'resent'; delivery: DeliveryView } | { outcome: 'missing' } | { outcome: 'under_way' };

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

  /** Turns taken so far: each claim starts its turns at another tenant. */
  private turn = 0;

  /**
   * Up to `count` due deliveries, each out of the other senders' reach for `leaseMs`, taken one per tenant
   * in turns (from a rotating start, one cell after another) among the tenants with room:
   * `roomOf(tenant)`, how many more of its deliveries the caller may start. `nextDue`: when the soonest
   * delivery of a tenant that had room and none due is (ms since the epoch; undefined when none is).
   */
  async claimDue(options: {
    count: number;
    leaseMs: number;
    roomOf: (tenant: string) => number;
  }): Promise<{ claimed: ClaimedDelivery[]; nextDue?: number }> {
    const turn = this.turn++;
    const cells = rotated(this.keys.cells, turn);
    const tenantsOf = await Promise.all(cells.map((cell) => this.redis.smembers(cell.webhookTenants)));
    const claimed: ClaimedDelivery[] = [];
    const taken = new Map<string, number>();
    const soonest: number[] = [];
    for (const [index, cell] of cells.entries()) {
      const left = options.count - claimed.length;
      if (left <= 0) break;
      const room = (tenant: string) => options.roomOf(tenant) - (taken.get(tenant) ?? 0);
      const tenants = rotated(tenantsOf[index]!.sort(), turn).filter((tenant) => room(tenant) > 0);
      if (!tenants.length) continue;
      const [ids, due] = (await CLAIM.run(this.redis, {
        keys: { tenantsKey: cell.webhookTenants, leasedKey: cell.webhooksLeased },
        args: { now: Date.now(), leaseUntil: Date.now() + options.leaseMs, count: left },
        restKeys: tenants.map((tenant) => cell.tenantWebhooksDue(tenant)),
        restArgs: tenants.flatMap((tenant) => [tenant, room(tenant)]),
      })) as [Array<number | string>, string];
      for (let at = 0; at < ids.length; at += 2) {
        const tenant = tenants[Number(ids[at]) - 1]!;
        claimed.push({ id: String(ids[at + 1]), tenant });
        taken.set(tenant, (taken.get(tenant) ?? 0) + 1);
      }
      if (due !== '') soonest.push(Number(due));
    }
    return { claimed, ...(soonest.length ? { nextDue: Math.min(...soonest) } : {}) };
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

  /** A delivery whose task (or record) is gone: out of its tenant's due set and the pending set. */
  async drop(id: string, tenant: string): Promise<void> {
    const taskId = deliveryTask(id);
    // An id that names no task is dropped from wherever it is.
    const cells = taskId ? [this.keys.cellOf(taskId)] : this.keys.cells;
    await Promise.all(
      cells.map((cell) =>
        this.redis
          .multi()
          .zrem(cell.tenantWebhooksDue(tenant), id)
          .zrem(cell.webhooksPending, id)
          .zrem(cell.webhooksLeased, id)
          .exec(),
      ),
    );
  }

  /**
   * Writes a delivery's next state, made by `next` from the state stored now: due again at its `nextAt`
   * while pending, else out of the sets. Should another write come between the read and this one, it is
   * read again and `next` made anew, so every attempt's record is kept. An attempt's write ends its
   * lease; a resend (`resent`) while a lease is held is refused: `under_way`. Written only while the
   * task's deliveries exist (a deleted task's stay deleted: `gone`).
   */
  async update(
    taskId: string,
    tenant: string,
    id: string,
    next: (current: StoredDelivery) => StoredDelivery,
    resent = false,
  ): Promise<DeliveryWrite> {
    const cell = this.keys.cellOf(taskId);
    for (let tries = 1; ; tries++) {
      const text = await this.redis.hget(this.keys.webhooks(taskId), id);
      const made = text === null ? undefined : next(JSON.parse(text) as StoredDelivery);
      const kept = made && { ...made, attempts: (made.attempts ?? []).slice(-KEPT_ATTEMPTS) };
      const pending = kept !== undefined && !kept.state && kept.nextAt !== undefined;
      const written = await RECORD.run(this.redis, {
        keys: {
          webhooksKey: this.keys.webhooks(taskId),
          webhooksDueKey: cell.tenantWebhooksDue(tenant),
          webhookTenantsKey: cell.webhookTenants,
          webhooksPendingKey: cell.webhooksPending,
          webhooksLeasedKey: cell.webhooksLeased,
        },
        args: {
          id,
          tenant,
          deliveryJson: kept ? JSON.stringify(kept) : '',
          nextAt: pending ? kept.nextAt! : '',
          resent: resent ? '1' : '0',
          expectedJson: text ?? '',
          now: Date.now(),
        },
      });
      if (written === 1) return 'written';
      if (written === 2) return 'under_way';
      if (written === 0) return 'gone';
      // Changed since it was read (3): a resend, or a sender whose lease ran out. Read again.
      if (tries >= 10) throw new Error(`webhook delivery ${id} kept changing while it was written`);
    }
  }

  /** A task's deliveries, oldest first, as the API shows them (`url`: the task's webhook). */
  async list(taskId: string, url: string): Promise<DeliveryView[]> {
    const hash = await this.redis.hgetall(this.keys.webhooks(taskId));
    return Object.entries(hash)
      .map(([id, text]) => deliveryView(id, JSON.parse(text) as StoredDelivery, url))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /**
   * Sends a delivery again, with the same id, now (and, should it fail, on the whole schedule again); its
   * attempts so far are kept. Refused while an attempt of it is under way (its lease held): a second one
   * would go out beside it.
   */
  async resend(taskId: string, tenant: string, id: string, url: string): Promise<ResendOutcome> {
    let again: StoredDelivery | undefined;
    const written = await this.update(
      taskId,
      tenant,
      id,
      (stored) => {
        // Due now, its retry schedule started over.
        const { state: _state, ...rest } = stored;
        again = { ...rest, nextAt: Date.now(), tries: 0 };
        return again;
      },
      true,
    );
    if (written === 'under_way') return { outcome: 'under_way' };
    if (written === 'gone' || !again) return { outcome: 'missing' };
    await this.notify();
    return { outcome: 'resent', delivery: deliveryView(id, again, url) };
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

/** `items` from the `turn`th on, then the ones before it. */
function rotated<Item>(items: readonly Item[], turn: number): Item[] {
  const start = items.length ? turn % items.length : 0;
  return [...items.slice(start), ...items.slice(0, start)];
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

/**
 * Model endpoints that could not be reached (connection refused or reset, DNS, timeouts, 5xx answers),
 * or that answered 429, shared by every worker process on every host, per tenant and model: a call that
 * fails so opens an outage; from then on, one call at a time tries the endpoint (the job whose call
 * failed last, after a wait that doubles from 1 s up to a cap, with jitter, or after the 429's
 * Retry-After), and every other call of that tenant and model
 * waits without going out, its job delayed and listed among the waiters; the first call that gets an
 * answer ends the outage and answers the waiters, for its worker to wake them at once.
 *
 * Per tenant: a tenant's own calls can make an endpoint fail (a prompt that crashes it, one that it
 * takes too long to answer, its own key's quota, a prompt refused with 429 as too large for the tokens
 * per minute), and that must not hold another tenant's tasks. Every tenant finds a dead
 * endpoint by its own calls, and tries it with its own single call. Time is Redis's (`TIME`).
 *
 * A call asks Redis first only when its process knows of an outage of its tenant and model: one opened
 * or ended is published (`keys.outagesChannel`) to every worker, and a run whose task waited for one
 * says so (`suspect`). Otherwise a call costs Redis nothing more. A message missed (a reconnect) costs a
 * call that fails and learns of the outage then, or a question that finds it over.
 */
import type { Redis } from 'ioredis';
import { luaScript, onMessage, publish, subscribe, type Keys } from '@agentq/store';

/** Whose calls, of which model, and the job that makes them (`member`: how it is woken). */
export interface OutageCall {
  tenant: string;
  model: string;
  member: string;
}

/** How a call may go: out (`go`; `probe`: the one try of an endpoint that was down), or wait. */
export type OutageEntry =
  | { kind: 'go' }
  | { kind: 'probe' }
  | {
      kind: 'wait';
      /** When its job looks again at the latest (ms since the epoch, Redis time): woken sooner when the endpoint answers. */
      until: number;
      /** When the outage began. */
      since: number;
      /** What the last failed call was told. */
      lastError: string;
      /** Redis's time now. */
      now: number;
      /** The last failed call drew a 429 (a rate limit), not a silence or a 5xx. */
      rateLimited: boolean;
    };

/** A failed call's outcome: its job waits `until` at the latest; the outage began `since`; Redis's time `now`. */
export interface OutageWait {
  until: number;
  since: number;
  now: number;
}

export interface ModelOutagesOptions {
  /** How long one try of the endpoint may take (the call's deadline): another job takes over past it. Default 305 s. */
  leaseMs?: number;
  /** How long past its wait the job to try next keeps its turn. Default 10 s. */
  graceMs?: number;
  /** The first wait after a failure. Default 1 s. */
  firstBackoffMs?: number;
  /** The longest wait between two tries, by model (models.<model>.outage.maxBackoffSeconds). Default 30 s. */
  maxBackoffMs?: (model: string) => number;
}

/** A call's default deadline (AGENTQ_LLM_DEADLINE_MS) and a moment more. */
const DEFAULT_LEASE_MS = 305_000;
/**
 * How long past its wait the job to try next keeps its turn: its task goes through admission first (a
 * second or so). One that never comes (cancelled, failed or removed while it waited) leaves the turn to
 * the first waiter back then, not after a call's whole deadline.
 */
const DEFAULT_GRACE_MS = 10_000;
/** Longest an outage nobody touches is kept (a task that comes later tries the endpoint at once). */
const KEEP_MS = 24 * 3600 * 1000;
/** What is kept of the last error. */
const ERROR_CHARS = 2_000;

const dir = new URL('../scripts/', import.meta.url);
const keys = ['stateKey', 'waitersKey'] as const;
const ENTER = luaScript({ dir, name: 'outage-enter', keys, args: ['member', 'leaseMs', 'keepMs'] });
const FAILED = luaScript({
  dir,
  name: 'outage-failed',
  keys,
  args: ['member', 'graceMs', 'keepMs', 'firstMs', 'capMs', 'jitter', 'lastError', 'waitMs', 'limited'],
});
const RECOVERED = luaScript({ dir, name: 'outage-recovered', keys, args: [] });
const LEFT = luaScript({ dir, name: 'outage-left', keys, args: ['member'] });

/** What is published when an outage opens or ends. */
interface OutageMessage {
  tenant: string;
  model: string;
  open: boolean;
}

export class ModelOutages {
  /** The outages this process knows of (or suspects), as `known` keys them: only their calls ask Redis. */
  private readonly known = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly options: ModelOutagesOptions = {},
  ) {}

  private static known(call: Pick<OutageCall, 'tenant' | 'model'>): string {
    return JSON.stringify([call.tenant, call.model]);
  }

  /** Hears of the outages every worker opens and ends, on `subscriber` (a connection in subscriber mode). */
  async listen(subscriber: Redis): Promise<void> {
    onMessage(subscriber, (channel, text) => {
      if (channel !== this.keys.outagesChannel) return;
      try {
        const message = JSON.parse(text) as OutageMessage;
        if (message.open) this.known.add(ModelOutages.known(message));
        else this.known.delete(ModelOutages.known(message));
      } catch {
        // Not a message of this version: the next failed call learns what it would have said.
      }
    });
    await subscribe(subscriber, this.keys.outagesChannel);
  }

  /** The caller has reason to think an outage is open (its task waited for one): its calls ask Redis. */
  suspect(call: Pick<OutageCall, 'tenant' | 'model'>): void {
    this.known.add(ModelOutages.known(call));
  }

  private async tell(call: Pick<OutageCall, 'tenant' | 'model'>, open: boolean): Promise<void> {
    const message: OutageMessage = { tenant: call.tenant, model: call.model, open };
    await publish(this.redis, this.keys.outagesChannel, JSON.stringify(message));
  }

  private keysOf(call: Pick<OutageCall, 'tenant' | 'model'>) {
    return {
      stateKey: this.keys.modelOutage(call.tenant, call.model),
      waitersKey: this.keys.modelOutageWaiters(call.tenant, call.model),
    };
  }

  /** Before a call goes out: whether it may (and whether it is the outage's one try), or how long to wait. */
  async enter(call: OutageCall): Promise<OutageEntry> {
    if (!this.known.has(ModelOutages.known(call))) return { kind: 'go' };
    const reply = (await ENTER.run(this.redis, {
      keys: this.keysOf(call),
      args: { member: call.member, leaseMs: this.options.leaseMs ?? DEFAULT_LEASE_MS, keepMs: KEEP_MS },
    })) as [string, number?, string?, string?, number?, string?];
    const [kind, until, since, lastError, now, limited] = reply;
    if (kind === 'go') this.known.delete(ModelOutages.known(call));
    if (kind !== 'wait') return { kind: kind === 'probe' ? 'probe' : 'go' };
    return {
      kind,
      until: Number(until),
      since: Number(since),
      lastError: lastError ?? '',
      now: Number(now),
      rateLimited: limited === '1',
    };
  }

  /**
   * A call of `call.member`'s could not reach the endpoint, or (`rateLimited`) drew a 429: the outage
   * opens, or its wait grows; `waitMs`: the 429's Retry-After, waited instead of the backoff.
   */
  async failed(
    call: OutageCall,
    lastError: string,
    options: { rateLimited?: boolean; waitMs?: number | undefined } = {},
  ): Promise<OutageWait> {
    this.known.add(ModelOutages.known(call));
    const [until, since, now, opened] = (await FAILED.run(this.redis, {
      keys: this.keysOf(call),
      args: {
        member: call.member,
        graceMs: this.options.graceMs ?? DEFAULT_GRACE_MS,
        keepMs: KEEP_MS,
        firstMs: this.options.firstBackoffMs ?? 1_000,
        capMs: this.options.maxBackoffMs?.(call.model) ?? 30_000,
        jitter: Math.random(),
        lastError: lastError.slice(0, ERROR_CHARS),
        waitMs: options.waitMs === undefined ? '' : Math.round(options.waitMs),
        limited: options.rateLimited ? 1 : 0,
      },
    })) as [number, number, number, number];
    if (opened) await this.tell(call, true);
    return { until: Number(until), since: Number(since), now: Number(now) };
  }

  /** The endpoint answered: the outage (if any) ends; answers the jobs that waited, to be woken. */
  async recovered(call: Pick<OutageCall, 'tenant' | 'model'>): Promise<string[]> {
    this.known.delete(ModelOutages.known(call));
    const waiters = (await RECOVERED.run(this.redis, { keys: this.keysOf(call), args: {} })) as string[] | null;
    if (!waiters) return [];
    await this.tell(call, false);
    return waiters;
  }

  /**
   * `call.member` waits no more (its task gave up, or its try ended without a word from the endpoint);
   * answers a waiter to wake when it was the one to try next, for that one to take its turn over.
   */
  async left(call: OutageCall): Promise<string | undefined> {
    const waiter = (await LEFT.run(this.redis, { keys: this.keysOf(call), args: { member: call.member } })) as
      string | null;
    return waiter ?? undefined;
  }
}

/**
 * Provider limits shared by every worker process on every host: requests and tokens per window
 * (a minute for `rpm`/`tpm`), per model, kept in Redis as a log of the window's calls (a sorted set:
 * member `<call id>:<tokens>`, score its time). A call is admitted only when the calls of the last
 * window plus this one fit both limits, so no window of that length ever holds more than the limit
 * (what was reserved; a call settles, when it ends, to the tokens the provider reported). A call that does not fit is
 * told when it can: when enough of the window's calls will have left it. A provider's x-ratelimit
 * headers block the model for everyone until they reset (a 429 does not: a tenant's own prompt can draw
 * one, and it holds only that tenant's calls, model-outages.ts). Time is Redis's
 * (`TIME`), so hosts with skewed clocks agree.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { luaScript, type Keys } from '@agentq/store';

/** A model's limits: at most `requests` calls and `tokens` tokens in any `windowMs`. */
export interface ModelLimit {
  requests?: number;
  tokens?: number;
  windowMs: number;
}

/** A call admitted (settle it with what it used), or when to ask again (ms since the epoch, Redis time). */
export type Reservation =
  | { admitted: true; id: string; model: string; tokens: number; windowMs: number }
  | { admitted: false; retryAt: number };

const dir = new URL('../scripts/', import.meta.url);
const RESERVE = luaScript({
  dir,
  name: 'reserve',
  keys: ['logKey', 'blockedKey'],
  args: ['windowMs', 'maxRequests', 'maxTokens', 'tokens', 'id'],
});
const SETTLE = luaScript({ dir, name: 'settle', keys: ['logKey'], args: ['id', 'reserved', 'used', 'windowMs'] });
const BLOCK = luaScript({ dir, name: 'block', keys: ['blockedKey'], args: ['ms'] });

export class SharedRateLimits {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /** Reserves a call of `tokens` (expected) within `limit`, or says when to ask again. */
  async reserve(model: string, limit: ModelLimit, tokens: number): Promise<Reservation> {
    const id = randomUUID();
    const whole = Math.max(0, Math.ceil(tokens));
    const retryAt = (await RESERVE.run(this.redis, {
      keys: { logKey: this.keys.limitLog(model), blockedKey: this.keys.limitBlocked(model) },
      args: {
        windowMs: limit.windowMs,
        maxRequests: limit.requests ?? 0,
        maxTokens: limit.tokens ?? 0,
        tokens: whole,
        id,
      },
    })) as number;
    return retryAt === 0
      ? { admitted: true, id, model, tokens: whole, windowMs: limit.windowMs }
      : { admitted: false, retryAt };
  }

  /** The call ended having used `tokens` (what the provider reported): its place in the window counts that much, from now. */
  async settle(reservation: Extract<Reservation, { admitted: true }>, tokens: number): Promise<void> {
    await SETTLE.run(this.redis, {
      keys: { logKey: this.keys.limitLog(reservation.model) },
      args: {
        id: reservation.id,
        reserved: reservation.tokens,
        used: Math.max(0, Math.ceil(tokens)),
        windowMs: reservation.windowMs,
      },
    });
  }

  /** No call of `model` is admitted for `ms` (the provider said so); answers until when (ms since the epoch). */
  block(model: string, ms: number): Promise<number> {
    return BLOCK.run(this.redis, {
      keys: { blockedKey: this.keys.limitBlocked(model) },
      args: { ms: Math.max(1, Math.ceil(ms)) },
    }) as Promise<number>;
  }
}

/**
 * Provider limits shared by every worker process on every host: requests and tokens per window
 * (a minute for `rpm`/`tpm`), per model, kept in Redis as a log of the window's calls (a sorted set:
 * member `<call id>:<tokens>`, score its time). A call is admitted only when the calls of the last
 * window plus this one fit both limits, so no window of that length ever holds more than the limit
 * (what was reserved; a call settles, when it ends, to the tokens the provider reported). A call that does not fit is
 * told when it can: when enough of the window's calls will have left it. A provider's own word (a 429's
 * Retry-After, its x-ratelimit headers) blocks the model for everyone until then. Time is Redis's
 * (`TIME`), so hosts with skewed clocks agree.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys } from '@agentq/store';

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

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: [log, blocked-until]; ARGV: [windowMs, max requests (0: none), max tokens (0: none), tokens, id]. Answers 0, or when to ask again. */
const RESERVE = `${NOW}
local window, maxRequests, maxTokens, tokens, id = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked > now then return blocked end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local log = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local count = #log / 2
local used = 0
for i = 1, #log, 2 do used = used + tonumber(string.match(log[i], ':(%d+)$')) end
local at = now
-- Requests: the oldest calls that must leave the window first.
if maxRequests > 0 and count + 1 > maxRequests then at = math.max(at, tonumber(log[2 * (count - maxRequests + 1)]) + window) end
-- Tokens: the oldest calls whose leaving frees enough (all of them for a call larger than the limit).
if maxTokens > 0 and count > 0 and used + tokens > maxTokens then
  local freed = 0
  for i = 1, #log, 2 do
    freed = freed + tonumber(string.match(log[i], ':(%d+)$'))
    if used - freed + tokens <= maxTokens or i == #log - 1 then
      at = math.max(at, tonumber(log[i + 1]) + window)
      break
    end
  end
end
if at > now then return at end
redis.call('ZADD', KEYS[1], now, id .. ':' .. tokens)
redis.call('PEXPIRE', KEYS[1], window)
return 0
`;

/**
 * KEYS: [log]; ARGV: [id, reserved tokens, used tokens, windowMs]: the call's entry counts what it used,
 * from now: it was sent after it was admitted (by as much as the caller took), so its window is measured
 * from its answer, which no send follows.
 */
const SETTLE = `${NOW}
local removed = redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. ARGV[2])
if removed == 0 then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
`;

/** KEYS: [blocked-until]; ARGV: [ms]: blocked until now + ms, unless blocked longer already. Answers the time. */
const BLOCK = `${NOW}
local blockedUntil = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current >= blockedUntil then return current end
redis.call('SET', KEYS[1], blockedUntil, 'PX', tonumber(ARGV[1]))
return blockedUntil
`;

interface LimitCommands {
  agentqReserve(
    log: string,
    blocked: string,
    windowMs: number,
    requests: number,
    tokens: number,
    callTokens: number,
    id: string,
  ): Promise<number>;
  agentqSettle(log: string, id: string, reserved: number, used: number, windowMs: number): Promise<number>;
  agentqBlock(blocked: string, ms: number): Promise<number>;
}

export class SharedRateLimits {
  private readonly commands: LimitCommands;

  constructor(
    redis: Redis,
    private readonly keys: Keys,
  ) {
    redis.defineCommand('agentqReserve', { numberOfKeys: 2, lua: RESERVE });
    redis.defineCommand('agentqSettle', { numberOfKeys: 1, lua: SETTLE });
    redis.defineCommand('agentqBlock', { numberOfKeys: 1, lua: BLOCK });
    this.commands = redis as unknown as LimitCommands;
  }

  /** Reserves a call of `tokens` (expected) within `limit`, or says when to ask again. */
  async reserve(model: string, limit: ModelLimit, tokens: number): Promise<Reservation> {
    const id = randomUUID();
    const whole = Math.max(0, Math.ceil(tokens));
    const retryAt = await this.commands.agentqReserve(
      this.keys.limitLog(model),
      this.keys.limitBlocked(model),
      limit.windowMs,
      limit.requests ?? 0,
      limit.tokens ?? 0,
      whole,
      id,
    );
    return retryAt === 0
      ? { admitted: true, id, model, tokens: whole, windowMs: limit.windowMs }
      : { admitted: false, retryAt };
  }

  /** The call ended having used `tokens` (what the provider reported): its place in the window counts that much, from now. */
  async settle(reservation: Extract<Reservation, { admitted: true }>, tokens: number): Promise<void> {
    await this.commands.agentqSettle(
      this.keys.limitLog(reservation.model),
      reservation.id,
      reservation.tokens,
      Math.max(0, Math.ceil(tokens)),
      reservation.windowMs,
    );
  }

  /** No call of `model` is admitted for `ms` (the provider said so); answers until when (ms since the epoch). */
  block(model: string, ms: number): Promise<number> {
    return this.commands.agentqBlock(this.keys.limitBlocked(model), Math.max(1, Math.ceil(ms)));
  }
}

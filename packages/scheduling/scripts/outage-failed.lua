-- A call could not reach its model's endpoint, or drew a 429 (model-outages.ts). The first failure opens
-- an outage and makes its job the one that tries again; that job's next failure doubles the wait (from
-- `firstMs` up to `capMs`, less up to a quarter as jitter), or, for a 429 that named one, waits its
-- `waitMs` (its Retry-After); another job's failure joins the waiters. The job to try next holds its
-- turn `graceMs` past its wait: one that never comes (its task cancelled, failed or removed while it
-- waited) leaves the turn to the first waiter back, and the waiters come back then. `limited` (1: a 429) is kept for
-- the waiters to say why they wait. Answers
-- {until, since, now, opened}: when this job looks again at the latest, when the outage began, Redis's
-- time, and 1 when this failure opened it.
-- @include now-ms
local now = nowMs()
local grace, keep = tonumber(graceMs), tonumber(keepMs)
local function backoff(streak)
  if waitMs ~= '' then return tonumber(waitMs) end
  local full = math.min(tonumber(firstMs) * 2 ^ (streak - 1), tonumber(capMs))
  return math.floor(full * (1 - 0.25 * tonumber(jitter)))
end
local state = redis.call('HMGET', stateKey, 'prober', 'probeUntil', 'streak', 'since', 'retryAt')
if not state[4] then
  local retryAt = now + backoff(1)
  redis.call('HSET', stateKey, 'since', now, 'streak', 1, 'retryAt', retryAt, 'prober', member,
    'probeUntil', retryAt + grace, 'error', lastError, 'limited', limited)
  redis.call('PEXPIRE', stateKey, keep)
  return {retryAt, now, now, 1}
end
local prober, probeUntil = state[1] or '', tonumber(state[2]) or 0
if prober == member or probeUntil <= now then
  local streak = (tonumber(state[3]) or 0) + 1
  local retryAt = now + backoff(streak)
  redis.call('HSET', stateKey, 'streak', streak, 'retryAt', retryAt, 'prober', member,
    'probeUntil', retryAt + grace, 'error', lastError, 'limited', limited)
  redis.call('PEXPIRE', stateKey, keep)
  redis.call('SREM', waitersKey, member)
  return {retryAt, tonumber(state[4]), now, 0}
end
-- Another job tries the endpoint: this one waits for its outcome.
redis.call('HSET', stateKey, 'error', lastError, 'limited', limited)
redis.call('SADD', waitersKey, member)
redis.call('PEXPIRE', waitersKey, keep)
return {math.max(tonumber(state[5]) or now, probeUntil), tonumber(state[4]), now, 0}

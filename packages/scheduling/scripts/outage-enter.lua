-- A call of a model whose endpoint a tenant's calls could not reach (model-outages.ts), before it goes
-- out. Answers {'go'} (no outage known), {'probe'} (the endpoint is down: this call is the one try now)
-- or {'wait', until, since, lastError, now, limited}: the endpoint is down (or answered 429: `limited`
-- '1') and another call tries it; this job waits (among the waiters, woken when it answers) until
-- `until` at the latest.
-- @include now-ms
local now = nowMs()
if redis.call('EXISTS', stateKey) == 0 then return {'go'} end
local state = redis.call('HMGET', stateKey, 'retryAt', 'prober', 'probeUntil', 'since', 'error', 'limited')
local retryAt, prober, probeUntil = tonumber(state[1]) or 0, state[2] or '', tonumber(state[3]) or 0
-- Its turn: the job that tried last, once its wait is over; or any, once that job's hold lapsed.
if now >= retryAt and (prober == member or probeUntil <= now) then
  redis.call('HSET', stateKey, 'prober', member, 'probeUntil', now + tonumber(leaseMs))
  redis.call('SREM', waitersKey, member)
  return {'probe'}
end
if prober == member then return {'wait', retryAt, state[4], state[5], now, state[6] or '0'} end
redis.call('SADD', waitersKey, member)
redis.call('PEXPIRE', waitersKey, tonumber(keepMs))
return {'wait', math.max(retryAt, probeUntil), state[4], state[5], now, state[6] or '0'}

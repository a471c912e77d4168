-- A job stops waiting for the endpoint (its task gave up, or its try ended without a word from the
-- endpoint: cancelled). When it was the one to try next, its turn is given up and a waiter is answered,
-- to be woken and take it over at the time that job would have.
redis.call('SREM', waitersKey, member)
if redis.call('HGET', stateKey, 'prober') ~= member then return false end
local retryAt = redis.call('HGET', stateKey, 'retryAt')
redis.call('HSET', stateKey, 'prober', '', 'probeUntil', retryAt)
return redis.call('SRANDMEMBER', waitersKey)

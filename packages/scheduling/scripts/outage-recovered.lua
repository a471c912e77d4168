-- The endpoint answered (model-outages.ts): the outage ends, and its waiters are answered, to be woken.
-- Answers false when there was none.
if redis.call('EXISTS', stateKey) == 0 then return false end
local waiters = redis.call('SMEMBERS', waitersKey)
redis.call('DEL', stateKey, waitersKey)
return waiters

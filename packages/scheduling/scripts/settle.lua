-- A reserved call ended (rate-limits.ts): its entry counts what it used, from now: it was sent after it
-- was admitted (by as much as the caller took), so its window is measured from its answer, which no
-- send follows. Answers 1, or 0 when its entry had left the window already.
-- @include now-ms
local removed = redis.call('ZREM', logKey, id .. ':' .. reserved)
if removed == 0 then return 0 end
redis.call('ZADD', logKey, nowMs(), id .. ':' .. used)
redis.call('PEXPIRE', logKey, tonumber(windowMs))
return 1

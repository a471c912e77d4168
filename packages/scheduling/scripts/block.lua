-- No call of a model is admitted for `ms` (the provider said so: rate-limits.ts), unless it is blocked
-- longer already. Answers until when.
-- @include now-ms
local blockedUntil = nowMs() + tonumber(ms)
local current = tonumber(redis.call('GET', blockedKey) or '0')
if current >= blockedUntil then return current end
redis.call('SET', blockedKey, blockedUntil, 'PX', tonumber(ms))
return blockedUntil

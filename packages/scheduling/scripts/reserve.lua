-- Reserves a model call of `tokens` within a shared limit (rate-limits.ts): `maxRequests` calls and
-- `maxTokens` tokens per `windowMs` (0: no such limit), unless the model is blocked. The log holds each
-- admitted call as `id:tokens` scored by when. Answers 0 (admitted), or when to ask again.
-- @include now-ms
local now = nowMs()
local window, requestLimit, tokenLimit, callTokens = tonumber(windowMs), tonumber(maxRequests), tonumber(maxTokens), tonumber(tokens)
local blocked = tonumber(redis.call('GET', blockedKey) or '0')
if blocked > now then return blocked end
redis.call('ZREMRANGEBYSCORE', logKey, '-inf', now - window)
local log = redis.call('ZRANGE', logKey, 0, -1, 'WITHSCORES')
local count = #log / 2
local used = 0
for index = 1, #log, 2 do used = used + tonumber(string.match(log[index], ':(%d+)$')) end
local at = now
-- Requests: the oldest calls that must leave the window first.
if requestLimit > 0 and count + 1 > requestLimit then at = math.max(at, tonumber(log[2 * (count - requestLimit + 1)]) + window) end
-- Tokens: the oldest calls whose leaving frees enough (all of them for a call larger than the limit).
if tokenLimit > 0 and count > 0 and used + callTokens > tokenLimit then
  local freed = 0
  for index = 1, #log, 2 do
    freed = freed + tonumber(string.match(log[index], ':(%d+)$'))
    if used - freed + callTokens <= tokenLimit or index == #log - 1 then
      at = math.max(at, tonumber(log[index + 1]) + window)
      break
    end
  end
end
if at > now then return at end
redis.call('ZADD', logKey, now, id .. ':' .. callTokens)
redis.call('PEXPIRE', logKey, window)
return 0

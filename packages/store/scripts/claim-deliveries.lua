-- Takes up to `count` webhook deliveries due at `now` out of the other senders' reach until
-- `leaseUntil` (webhook-deliveries.ts). Answers {ids, when the soonest is due ('' when none is)}: an
-- idle sender's poll is one call.
-- @include call-many
local due = redis.call('ZRANGEBYSCORE', dueKey, '-inf', now, 'LIMIT', 0, tonumber(count))
if #due > 0 then
  local leases = {}
  for _, id in ipairs(due) do
    leases[#leases + 1] = leaseUntil
    leases[#leases + 1] = id
  end
  callMany('ZADD', dueKey, leases)
  return {due, ''}
end
local soonest = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
return {due, soonest[2] or ''}

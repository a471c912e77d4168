-- Takes up to `count` ids due at `now` out of the other workers' reach until `leaseUntil` (claim-due.ts),
-- moving them in the sorted set to that score (a ZADD per thousand of them). Answers the ids.
-- @include call-many
local due = redis.call('ZRANGEBYSCORE', dueKey, '-inf', now, 'LIMIT', 0, tonumber(count))
local leases = {}
for _, id in ipairs(due) do
  leases[#leases + 1] = leaseUntil
  leases[#leases + 1] = id
end
callMany('ZADD', dueKey, leases)
return due

-- Claims due webhook deliveries fairly between tenants (webhook-deliveries.ts). KEYS from KEYS_REST:
-- each tenant's due set, in this turn's order; ARGV from ARGV_REST: each tenant's name and the room it
-- has left (how many more of its deliveries the sender may start). Each pass over the tenants takes one
-- due delivery of each that has room, until `count` are taken or none has more due: a tenant with
-- thousands due takes no more turns than one with a single one. A taken delivery is leased (its score
-- moved to `leaseUntil`, and it is in `leasedKey` until then: its attempt is under way, and a resend
-- waits for its end). A tenant whose due set is empty leaves `tenantsKey`.
-- Answers {the taken: tenant's index (from 1), id, ...; the soonest score of the tenants that had room
-- and none due now, or ''}.
local tenants = #KEYS - KEYS_REST + 1
-- Leases that ran out (their sender died mid-attempt) hold nothing any more.
redis.call('ZREMRANGEBYSCORE', leasedKey, '-inf', now)
local room, drained, taken = {}, {}, {}
for index = 1, tenants do room[index] = tonumber(ARGV[ARGV_REST + 2 * index - 1]) end
local left = tonumber(count)
local more = true
while left > 0 and more do
  more = false
  for index = 1, tenants do
    if left > 0 and room[index] > 0 and not drained[index] then
      local dueKey = KEYS[KEYS_REST + index - 1]
      local due = redis.call('ZRANGEBYSCORE', dueKey, '-inf', now, 'LIMIT', 0, 1)
      if #due == 0 then
        drained[index] = true
      else
        redis.call('ZADD', dueKey, leaseUntil, due[1])
        redis.call('ZADD', leasedKey, leaseUntil, due[1])
        taken[#taken + 1] = index
        taken[#taken + 1] = due[1]
        room[index] = room[index] - 1
        left = left - 1
        more = true
      end
    end
  end
end
local soonest = ''
for index = 1, tenants do
  if drained[index] then
    local dueKey = KEYS[KEYS_REST + index - 1]
    local first = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
    if #first == 0 then
      redis.call('SREM', tenantsKey, ARGV[ARGV_REST + 2 * index - 2])
    elseif soonest == '' or tonumber(first[2]) < tonumber(soonest) then
      soonest = first[2]
    end
  end
end
return {taken, soonest}

-- @include call-many
-- joinTenantList(ring, list, arrivals, tenant, ids, priorities): adds the tasks to the tenant's list
-- for a pool (one ZADD), scored priority first (PRIORITY_STEP apart), then arrival (from the `arrivals`
-- counter), and the tenant to the pool's ring at the ring's least virtual time if it is not there (it
-- gets no credit for having been away). Needs the constant PRIORITY_STEP (fair-lists.ts).
local function joinTenantList(ring, list, arrivals, tenant, ids, priorities)
  local count = #ids
  if count == 0 then return end
  local first = redis.call('INCRBY', arrivals, count) - count
  local members = {}
  for index = 1, count do
    -- ('%d': a whole number below 2^63, made without the C library's floating-point formatting)
    members[2 * index - 1] = string.format('%d', (11 - tonumber(priorities[index])) * PRIORITY_STEP + first + index)
    members[2 * index] = ids[index]
  end
  callMany('ZADD', list, members)
  if not redis.call('ZSCORE', ring, tenant) then
    local least = redis.call('ZRANGE', ring, 0, 0, 'WITHSCORES')
    redis.call('ZADD', ring, least[2] or 0, tenant)
  end
end

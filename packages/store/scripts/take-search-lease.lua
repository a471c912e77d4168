-- TAKE SEARCH LEASE: a turn for one of a tenant's task searches, counted over every API process
-- (search-leases.ts). KEYS: the tenant's leases at the install's home (a sorted set: lease id, scored by
-- when it ends, ms). ARGV: the lease's id, the most leases at once, and how long one lasts when its
-- process never lets it go (SEARCH_LEASE_MS). Drops the leases whose time is over (a process that died);
-- answers 1 when this one is taken, 0 when `most` are held already.
-- @include now-ms
local now = nowMs()
redis.call('ZREMRANGEBYSCORE', leasesKey, '-inf', now)
if redis.call('ZCARD', leasesKey) >= tonumber(most) then return 0 end
redis.call('ZADD', leasesKey, now + tonumber(leaseMs), id)
redis.call('PEXPIRE', leasesKey, leaseMs)
return 1

-- A turn of a concurrency key's gate (concurrency-gate.ts). A submitted task that names a key waits in
-- the key's queue (CREATE put it there, in submit order), not in its tenant's list. A turn first lets
-- go of the holders that ended (or are gone): a task holds its key from the moment it leaves the queue
-- until it ends, waiting or resumed on another worker included. Then, while the head of the queue fits
-- under its own limit, it leaves the queue for its tenant's list of its pool (join-tenant-list), as a
-- holder; fair admission takes it from there. A head that is no longer queued (cancelled, deleted) is
-- dropped. A key whose queue is empty leaves the set of keys with waiting tasks (`pendingKey`).
--
-- KEYS: the key's holders (a set) and queue (a sorted set), the set of keys with waiting tasks, the
-- fair arrival counter; then from KEYS_REST, each holder's record (as the caller read the holders), and
-- for each candidate (the head of the queue, as the caller read it) its record, its pool's ring and its
-- tenant's list of that pool. ARGV: the key's base, how many holders and candidates; then from
-- ARGV_REST the holders' ids, then each candidate's id, pool and tenant.
--
-- Answers {pools, reread}: the pool each task that left the queue joined; reread 1 when the holders or
-- the queue's head were not what the caller declared (or every candidate left): the caller reads and
-- turns again.
-- @include call-many
-- @include join-tenant-list
local ended = {completed = true, failed = true, cancelled = true, skipped = true}
local holderCount, candidateCount = tonumber(holders), tonumber(candidates)
local holderKeys = {}
for index = 1, holderCount do holderKeys[ARGV[ARGV_REST + index - 1]] = KEYS[KEYS_REST + index - 1] end
local holding = 0
for _, holder in ipairs(redis.call('SMEMBERS', holdersKey)) do
  local key = holderKeys[holder]
  if not key then return {{}, 1} end
  local status = redis.call('HGET', key, 'status')
  if not status or ended[status] then
    redis.call('SREM', holdersKey, holder)
  else
    holding = holding + 1
  end
end
local joined = {}
for index = 1, candidateCount do
  local keyAt = KEYS_REST + holderCount + (index - 1) * 3
  local argAt = ARGV_REST + holderCount + (index - 1) * 3
  local id, pool, tenant = ARGV[argAt], ARGV[argAt + 1], ARGV[argAt + 2]
  local head = redis.call('ZRANGE', queueKey, 0, 0)[1]
  if not head then break end
  if head ~= id then return {joined, 1} end
  local taskKey = KEYS[keyAt]
  local fields = redis.call('HMGET', taskKey, 'status', 'priority', 'concurrencyLimit')
  if fields[1] ~= 'queued' then
    redis.call('ZREM', queueKey, id)
  else
    if holding >= tonumber(fields[3] or '1') then return {joined, 0} end
    redis.call('ZREM', queueKey, id)
    redis.call('SADD', holdersKey, id)
    redis.call('HDEL', taskKey, 'gated')
    holding = holding + 1
    joinTenantList(KEYS[keyAt + 1], KEYS[keyAt + 2], arrivalsKey, tenant, {id}, {fields[2] or '5'})
    joined[#joined + 1] = pool
  end
end
if redis.call('ZCARD', queueKey) == 0 then
  redis.call('SREM', pendingKey, base)
  return {joined, 0}
end
-- Every candidate the caller read left the queue, and more wait: read the next ones.
return {joined, candidateCount > 0 and 1 or 0}

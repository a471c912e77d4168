-- Writes a webhook delivery's state (webhook-deliveries.ts): due again at `nextAt` in its tenant's due
-- set (the tenant in the set of tenants with some) while pending, else out of the due and pending sets.
-- The state was made from `expectedJson`, the one read before: when another write came between, nothing
-- is written (3: read again), so no attempt's record is lost. An attempt's write ends its lease; a resend
-- (`resent` 1) while a lease is held is refused (2: an attempt is under way). A deleted task's deliveries
-- stay deleted: with its record gone, the delivery only leaves the sets (0).
local current = redis.call('HGET', webhooksKey, id)
if not current then
  redis.call('ZREM', webhooksDueKey, id)
  redis.call('ZREM', webhooksPendingKey, id)
  redis.call('ZREM', webhooksLeasedKey, id)
  return 0
end
if resent == '1' then
  local lease = redis.call('ZSCORE', webhooksLeasedKey, id)
  if lease and tonumber(lease) > tonumber(now) then return 2 end
end
if current ~= expectedJson then return 3 end
if resent ~= '1' then redis.call('ZREM', webhooksLeasedKey, id) end
redis.call('HSET', webhooksKey, id, deliveryJson)
if nextAt ~= '' then
  redis.call('ZADD', webhooksDueKey, nextAt, id)
  redis.call('SADD', webhookTenantsKey, tenant)
  if resent == '1' then redis.call('ZADD', webhooksPendingKey, nextAt, id) end
else
  redis.call('ZREM', webhooksDueKey, id)
  redis.call('ZREM', webhooksPendingKey, id)
end
return 1

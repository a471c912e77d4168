-- Writes a webhook delivery's state after an attempt (webhook-deliveries.ts): due again at `nextAt`
-- in its tenant's due set (the tenant in the set of tenants with some) while pending, else out of the
-- due and pending sets. A deleted task's deliveries stay deleted: with its hash gone, the delivery only
-- leaves the sets.
if redis.call('EXISTS', webhooksKey) == 0 then
  redis.call('ZREM', webhooksDueKey, id)
  redis.call('ZREM', webhooksPendingKey, id)
  return 0
end
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

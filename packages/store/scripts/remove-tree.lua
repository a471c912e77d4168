-- Removes a task tree (remove-tasks.ts): takes each record's bytes off its tenant's count
-- (`tenantBytesKey`, tenant-bytes.ts), then removes every key, in one script, so that two removals at
-- once take them off once. KEYS from KEYS_REST: the tree's records (`records` of them), then its other
-- keys.
-- @include release-bytes
for index = KEYS_REST, KEYS_REST + tonumber(records) - 1 do releaseBytes(KEYS[index], tenantBytesKey) end
for from = KEYS_REST, #KEYS, 1000 do redis.call('UNLINK', unpack(KEYS, from, math.min(from + 999, #KEYS))) end

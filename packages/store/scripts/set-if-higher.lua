-- Sets the storage version (migrations/migrate-storage.ts) only upward: a process that started later
-- and finished first may have set a higher one.
local current = tonumber(redis.call('GET', versionKey) or '0')
if tonumber(version) > current then redis.call('SET', versionKey, version) end

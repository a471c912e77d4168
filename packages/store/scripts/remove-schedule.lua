-- REMOVE SCHEDULE: a schedule's record, files and runs, its places in the lists, and its bytes off its
-- tenant's count (the caller is schedule-store.ts, remove), in one call: two removals at once take its
-- bytes off once. KEYS: the record, its files, its runs, its tenant's list, every tenant's list, the
-- tenant's byte counter. ARGV: its id. Answers 1, or 0 when it was gone.
-- @include release-bytes
if redis.call('EXISTS', scheduleKey) == 0 then return 0 end
releaseBytes(scheduleKey, bytesKey)
redis.call('DEL', scheduleKey, filesKey, runsKey)
redis.call('ZREM', tenantSchedulesKey, id)
redis.call('ZREM', everyScheduleKey, id)
return 1

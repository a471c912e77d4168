-- Storage migration 1 (migrations/0001-task-lists-by-status-score.ts): each task (its record at
-- KEYS_REST on, its id in ARGV from ARGV_REST) goes into its status's band of `listKey`, as its record
-- says now (the record, not an old list, is the truth), in one script: a status change by a running
-- process cannot fall between the read and the write. Needs STATUS_SPAN and a constant per status code.
local bands = {pending = PENDING, queued = QUEUED, running = RUNNING, waiting = WAITING, completed = COMPLETED, failed = FAILED, skipped = SKIPPED, cancelled = CANCELLED}
for index = 0, #ARGV - ARGV_REST do
  local record = redis.call('HMGET', KEYS[KEYS_REST + index], 'status', 'order')
  local band = record[1] and bands[record[1]]
  if band and record[2] then
    redis.call('ZADD', listKey, string.format('%d', band * STATUS_SPAN + tonumber(record[2])), ARGV[ARGV_REST + index])
  end
end

-- A task's events after `afterSeq` (task-events.ts): its packed string, and its list from there. The
-- list's first element tells where it starts (a list begun after a compaction does not start at 1):
-- the read skips what was seen.
local after = tonumber(afterSeq)
local first = redis.call('LINDEX', listKey, 0)
local start = 0
if first then start = math.max(0, after - tonumber(string.match(first, '"seq":(%d+)')) + 1) end
return {
  redis.call('GET', packedKey) or '',
  redis.call('LRANGE', listKey, start, -1),
}

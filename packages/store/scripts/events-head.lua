-- Where a task's events stand (event-pages.ts): its packed string's length, and the seq its list
-- starts at (0: empty).
local first = redis.call('LINDEX', listKey, 0)
return {
  redis.call('STRLEN', packedKey),
  first and tonumber(string.match(first, '"seq":(%d+)')) or 0,
}

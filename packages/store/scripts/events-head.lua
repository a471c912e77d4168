-- Where a task's events stand (event-pages.ts): its packed string's length, an earlier version's stream
-- whole (it is small), and the seq its list starts at (0: empty).
local first = redis.call('LINDEX', listKey, 0)
return {
  redis.call('STRLEN', packedKey),
  redis.call('XRANGE', streamKey, '-', '+'),
  first and tonumber(string.match(first, '"seq":(%d+)')) or 0,
}

-- Storage migration 2 (migrations/0002-event-streams-into-lists.ts): a task's events an earlier version
-- kept in a stream (one entry per write, its events one per line) join its list, every event in order
-- of seq, and the stream goes. Only if the stream still has the `entries` the caller read (their lines
-- are ARGV from ARGV_REST): else nothing is done and it answers 0, for the caller to read it again.
-- @include call-many
if redis.call('XLEN', streamKey) ~= tonumber(entries) then return 0 end
local lines = redis.call('LRANGE', listKey, 0, -1)
for index = ARGV_REST, #ARGV do lines[#lines + 1] = ARGV[index] end
local seqOf = {}
for _, line in ipairs(lines) do seqOf[line] = tonumber(string.match(line, '"seq":(%d+)')) or 0 end
table.sort(lines, function(a, b) return seqOf[a] < seqOf[b] end)
redis.call('DEL', listKey)
callMany('RPUSH', listKey, lines)
redis.call('DEL', streamKey)
return 1

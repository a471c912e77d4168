-- Writes a batch of ended tasks' compacted events (compact-events.ts). KEYS from KEYS_REST: for each
-- task its list, its stream (an earlier version's) and its packed string. ARGV from ARGV_REST: for each
-- task its id, the list's length read, the stream's length read, '1' when there was anything to pack,
-- the deflated lines. A task whose list or stream grew meanwhile (a retried task) stays in the
-- to-compact set for a later batch; the others leave it. A stream none was read of is left alone.
-- Answers how many were replaced.
-- @include call-many
local replaced = 0
local done = {}
local task = 0
for index = ARGV_REST, #ARGV, 5 do
  local listKey = KEYS[KEYS_REST + task * 3]
  local streamKey = KEYS[KEYS_REST + task * 3 + 1]
  local packedKey = KEYS[KEYS_REST + task * 3 + 2]
  local id, listLength, streamLength = ARGV[index], tonumber(ARGV[index + 1]), tonumber(ARGV[index + 2])
  local packs, blob = ARGV[index + 3] == '1', ARGV[index + 4]
  if redis.call('LLEN', listKey) == listLength and (streamLength == 0 or redis.call('XLEN', streamKey) == streamLength) then
    if packs then
      redis.call('SET', packedKey, blob)
      redis.call('DEL', listKey)
      if streamLength > 0 then redis.call('DEL', streamKey) end
      replaced = replaced + 1
    end
    done[#done + 1] = id
  end
  task = task + 1
end
callMany('ZREM', toCompactKey, done)
return replaced

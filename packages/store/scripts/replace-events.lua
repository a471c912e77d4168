-- Writes a batch of ended tasks' compacted events (compact-events.ts). KEYS from KEYS_REST: for each
-- task its list and its packed string. ARGV from ARGV_REST: for each task its id, the list's length
-- read, '1' when there was anything to pack, the deflated lines. A task whose list grew meanwhile (a
-- retried task) stays in the to-compact set for a later batch; the others leave it. Answers how many
-- were replaced.
-- @include call-many
local replaced = 0
local done = {}
local task = 0
for index = ARGV_REST, #ARGV, 4 do
  local listKey = KEYS[KEYS_REST + task * 2]
  local packedKey = KEYS[KEYS_REST + task * 2 + 1]
  local id, listLength, packs, blob = ARGV[index], tonumber(ARGV[index + 1]), ARGV[index + 2] == '1', ARGV[index + 3]
  if redis.call('LLEN', listKey) == listLength then
    if packs then
      redis.call('SET', packedKey, blob)
      redis.call('DEL', listKey)
      replaced = replaced + 1
    end
    done[#done + 1] = id
  end
  task = task + 1
end
callMany('ZREM', toCompactKey, done)
return replaced

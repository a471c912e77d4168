-- Takes room for `count` more children in a root's tree (tree-room.ts): adds them to the root record's
-- `descendants` only if the sum stays within `max`, in one step, so that a call that does not fit never
-- holds room another call needs. Answers the count after (taken), or -1 with the count as it is.
local taken = tonumber(redis.call('HGET', rootKey, 'descendants') or '0')
if taken + tonumber(count) > tonumber(max) then return {-1, taken} end
return {redis.call('HINCRBY', rootKey, 'descendants', count), taken}

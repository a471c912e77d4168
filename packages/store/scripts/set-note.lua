-- Sets a note of a task tree's shared memory (redis-scratchpad.ts), unless it is new and the hash holds
-- `most` notes already. Answers 1 when set, 0 when refused.
if redis.call('HEXISTS', notesKey, name) == 0 and redis.call('HLEN', notesKey) >= tonumber(most) then return 0 end
redis.call('HSET', notesKey, name, value)
return 1

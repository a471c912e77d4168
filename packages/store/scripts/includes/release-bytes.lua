-- releaseBytes(taskKey, counterKey): takes a task's bytes off its tenant's count (`counterKey`, removed
-- at 0); the caller removes the record in the same script.
local function releaseBytes(taskKey, counterKey)
  local bytes = redis.call('HGET', taskKey, 'bytes')
  if not bytes then return end
  -- A tenant with nothing stored keeps no key.
  if redis.call('DECRBY', counterKey, bytes) <= 0 then redis.call('DEL', counterKey) end
end

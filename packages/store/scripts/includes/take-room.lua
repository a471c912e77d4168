-- @include call-many
-- @include now-ms
-- takeRoom(room, count, bytes) for a CREATE call storing `count` of a submit's tasks, which write
-- `bytes` (tenant-room.ts). `room` = {list, held, expiry, heldBytes, counter (the KEYS indexes of the
-- tenant's list, its hold sets and its byte counter), id, tasks, bytes (all the submit's), first,
-- unfinished, stored, maxBytes (the limits; maxBytes may be absent)}. Answers true, or false with the
-- counts that left no room (unfinished, stored, bytes written and held); a later call whose hold is
-- gone answers false alone. Needs the constants UNFINISHED_MAX_SCORE (task-index.ts) and HOLD_MS.
local function takeRoom(room, count, bytes)
  local listKey, heldKey, expiryKey, heldBytesKey = KEYS[room.list], KEYS[room.held], KEYS[room.expiry], KEYS[room.heldBytes]
  if not room.first then
    local left = tonumber(redis.call('ZSCORE', heldKey, room.id) or '0')
    if left < count then return false end
    if left == count then
      redis.call('ZREM', heldKey, room.id)
      redis.call('ZREM', expiryKey, room.id)
      if room.maxBytes then redis.call('ZREM', heldBytesKey, room.id) end
    else
      redis.call('ZINCRBY', heldKey, -count, room.id)
      if room.maxBytes then redis.call('ZINCRBY', heldBytesKey, -bytes, room.id) end
    end
    return true
  end
  local holding, holdingBytes = 0, 0
  if redis.call('EXISTS', heldKey) == 1 then
    local gone = redis.call('ZRANGEBYSCORE', expiryKey, '-inf', nowMs())
    if #gone > 0 then
      callMany('ZREM', heldKey, gone)
      callMany('ZREM', expiryKey, gone)
      callMany('ZREM', heldBytesKey, gone)
    end
    local holds = redis.call('ZRANGE', heldKey, 0, -1, 'WITHSCORES')
    for index = 2, #holds, 2 do holding = holding + tonumber(holds[index]) end
    if room.maxBytes then
      holds = redis.call('ZRANGE', heldBytesKey, 0, -1, 'WITHSCORES')
      for index = 2, #holds, 2 do holdingBytes = holdingBytes + tonumber(holds[index]) end
    end
  end
  local unfinished = redis.call('ZCOUNT', listKey, 0, UNFINISHED_MAX_SCORE) + holding
  local stored = redis.call('ZCARD', listKey) + holding
  local written = room.maxBytes and tonumber(redis.call('GET', KEYS[room.counter]) or '0') + holdingBytes or 0
  if unfinished + room.tasks > room.unfinished or stored + room.tasks > room.stored
    or (room.maxBytes and written + room.bytes > room.maxBytes) then
    return false, unfinished, stored, written
  end
  if room.tasks > count then
    redis.call('ZADD', heldKey, room.tasks - count, room.id)
    redis.call('ZADD', expiryKey, string.format('%d', nowMs() + HOLD_MS), room.id)
    redis.call('PEXPIRE', heldKey, HOLD_MS)
    redis.call('PEXPIRE', expiryKey, HOLD_MS)
    if room.maxBytes then
      redis.call('ZADD', heldBytesKey, string.format('%d', room.bytes - bytes), room.id)
      redis.call('PEXPIRE', heldBytesKey, HOLD_MS)
    end
  end
  return true
end

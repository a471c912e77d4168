-- HOLD ROOM: a submit's hold on its tenant's room, when its tasks are spread over several cells
-- (cell-room.ts). KEYS: the tenant's holds at the install's home (a hash: submit id -> "tasks bytes
-- until"). ARGV: the submit's id, its tasks and bytes, and HOLD_MS. Drops the holds whose time is over
-- (a submitter that died), adds this one, and answers what the others hold: {tasks, bytes}.
-- @include now-ms
local now = nowMs()
local holds = redis.call('HGETALL', holdsKey)
local tasks, bytes, gone = 0, 0, {}
for index = 1, #holds, 2 do
  local held, heldBytes, untilMs = string.match(holds[index + 1], '^(%d+) (%d+) (%d+)$')
  if not untilMs or tonumber(untilMs) < now then
    gone[#gone + 1] = holds[index]
  elseif holds[index] ~= id then
    tasks = tasks + tonumber(held)
    bytes = bytes + tonumber(heldBytes)
  end
end
if #gone > 0 then redis.call('HDEL', holdsKey, unpack(gone)) end
redis.call('HSET', holdsKey, id, string.format('%d %d %d', count, size, now + holdMs))
redis.call('PEXPIRE', holdsKey, holdMs)
return {tasks, bytes}

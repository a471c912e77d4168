-- A task's record (task-store.ts, getCut) with its result cut to its first `headBytes` and last
-- `tailBytes` bytes when it holds more: a result of megabytes never leaves Redis. Answers HGETALL's
-- pairs, then `resultBytes` (the whole result's size) when it has a result, and `resultTail` when the
-- result was cut (the pair `result` then holds its head).
local fields = redis.call('HGETALL', taskKey)
local head, tail = tonumber(headBytes), tonumber(tailBytes)
local count = #fields
for index = 1, count, 2 do
  if fields[index] == 'result' then
    local value = fields[index + 1]
    fields[#fields + 1] = 'resultBytes'
    fields[#fields + 1] = tostring(#value)
    if #value > head + tail then
      fields[index + 1] = string.sub(value, 1, head)
      fields[#fields + 1] = 'resultTail'
      fields[#fields + 1] = string.sub(value, -tail)
    end
  end
end
return fields

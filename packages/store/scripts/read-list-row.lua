-- READ LIST ROW: the fields a list shows of one task (task-store.ts, list), with its long texts cut in
-- Redis: a list never carries a whole prompt or result (a prompt may be 200,000 bytes, a result
-- megabytes, and a page lists hundreds). KEYS: the task. ARGV: how many bytes of a long text a row
-- keeps, then the names of the fields to read (ARGV_REST on). Answers their values in that order (false
-- for a field the task has not), each of `prompt` and `result` cut to its first `previewBytes` bytes at
-- the start of a UTF-8 character, then '1' when one was cut, else '0'.
local limit = tonumber(previewBytes)
local names = {}
for index = ARGV_REST, #ARGV do names[#names + 1] = ARGV[index] end
local values = redis.call('HMGET', taskKey, unpack(names))
local cut = '0'
for index, name in ipairs(names) do
  local value = values[index]
  if (name == 'prompt' or name == 'result') and value and #value > limit then
    -- A byte 10xxxxxx continues a character: the cut moves back to the start of the one it splits.
    local keep = limit
    while keep > 0 do
      local next = string.byte(value, keep + 1)
      if next < 128 or next >= 192 then break end
      keep = keep - 1
    end
    values[index] = string.sub(value, 1, keep)
    cut = '1'
  end
end
values[#names + 1] = cut
return values

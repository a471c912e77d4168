-- MATCH PROMPT: whether a task's prompt holds a text, in any case of ASCII letters, and (with a status)
-- whether the task has that status (task-store.ts, list with `q`): a search reads each prompt in Redis,
-- never in the API. KEYS: the task. ARGV: the text, its ASCII letters lower case; the status wanted
-- ('' for any). Answers 1 when both hold, else 0 (0 too for a task gone).
local fields = redis.call('HMGET', taskKey, 'prompt', 'status')
if not fields[1] then return 0 end
if status ~= '' and fields[2] ~= status then return 0 end
if needle ~= '' and not string.find(string.lower(fields[1]), needle, 1, true) then return 0 end
return 1

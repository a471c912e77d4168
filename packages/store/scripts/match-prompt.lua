-- MATCH PROMPT: whether a task's prompt holds a text, in any case of ASCII letters, and (with a status)
-- whether the task has that status (task-store.ts, list with `q`): a search reads each prompt in Redis,
-- never in the API. KEYS: the task. ARGV: the text, its ASCII letters lower case ('' for any: the
-- prompt is then not read); the status wanted ('' for any). Answers 1 when both hold, else 0 (0 too for
-- a task gone).
if status ~= '' and redis.call('HGET', taskKey, 'status') ~= status then return 0 end
if needle == '' then return redis.call('EXISTS', taskKey) end
local prompt = redis.call('HGET', taskKey, 'prompt')
if not prompt then return 0 end
if not string.find(string.lower(prompt), needle, 1, true) then return 0 end
return 1

/**
 * The one write path of a task's state, as a Lua script so that everything in a commit lands
 * together or not at all: a guarded status change (by expected status, and by the run token of the
 * worker that holds the task) (with the status indexes, global and per tenant), fields, token usage,
 * appended messages, and events. Each event gets the next `seq` (no gaps) as its stream id, and is
 * published on the task's channel for live followers.
 */

export const COMMIT_SCRIPT = `
local task, messagesKey, eventsKey, statusPrefix, expiryKey, tenantPrefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local c = cjson.decode(ARGV[1])
local current = redis.call('HGET', task, 'status')
if not current then return {-2, '', '0'} end
if c.expect then
  local allowed = false
  for _, status in ipairs(c.expect) do if status == current then allowed = true end end
  if not allowed then return {-1, current, redis.call('HGET', task, 'cancelRequested') or '0'} end
end
-- A worker that lost its job (it stalled and another worker took over) may not write any more.
if c.runToken and redis.call('HGET', task, 'runToken') ~= c.runToken then
  return {-1, current, redis.call('HGET', task, 'cancelRequested') or '0'}
end
if c.status and c.status ~= current then
  -- Only submitted tasks are in the lists by status; subtasks are reached through their root.
  if redis.call('HGET', task, 'listed') == '1' then
    local order = redis.call('HGET', task, 'order')
    redis.call('ZREM', statusPrefix .. current, c.taskId)
    redis.call('ZADD', statusPrefix .. c.status, order, c.taskId)
    local tenant = redis.call('HGET', task, 'tenant')
    if tenant then
      redis.call('ZREM', tenantPrefix .. tenant .. ':tasks:status:' .. current, c.taskId)
      redis.call('ZADD', tenantPrefix .. tenant .. ':tasks:status:' .. c.status, order, c.taskId)
    end
    -- A submitted task that ended is removed with its subtasks once its retention is over.
    if c.expireAt then redis.call('ZADD', expiryKey, c.expireAt, c.taskId) end
  end
  redis.call('HSET', task, 'status', c.status)
end
if c.fields then
  for name, value in pairs(c.fields) do redis.call('HSET', task, name, value) end
end
if c.usage then
  redis.call('HINCRBY', task, 'promptTokens', c.usage[1])
  redis.call('HINCRBY', task, 'completionTokens', c.usage[2])
end
if c.steps then redis.call('HSET', task, 'steps', c.steps) end
for _, message in ipairs(c.messages or {}) do redis.call('RPUSH', messagesKey, message) end
local seq = 0
local rootId = redis.call('HGET', task, 'rootId') or c.taskId
for _, event in ipairs(c.events or {}) do
  seq = redis.call('HINCRBY', task, 'seq', 1)
  local payload = '{"id":"' .. c.taskId .. ':' .. seq .. '","seq":' .. seq .. ',"rootId":"' .. rootId .. '",' .. string.sub(event, 2)
  redis.call('XADD', eventsKey, seq .. '-0', 'event', payload)
  redis.call('PUBLISH', c.channel, payload)
end
return {seq, redis.call('HGET', task, 'status'), redis.call('HGET', task, 'cancelRequested') or '0'}
`;

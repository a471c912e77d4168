/**
 * The write path of a task's state, as Lua scripts, so that everything in a change lands together or
 * not at all. The contract (docs/DESIGN.md, "The commit script"):
 *
 * COMMIT: KEYS = [task, messages, events, expiry, ...status index keys]; ARGV = [payload JSON].
 * - The payload may ask for a status change guarded by `expect` (the statuses it may change from)
 *   and by `runToken` (the run that holds the task), and carry fields, usage, steps, messages to
 *   append and events to add. The status index keys are passed for a status change of a submitted
 *   task: for each status of `indexStatuses`, the global index, then the tenant's, in that order.
 * - Returns `{outcome, seq, status, cancelRequested}`: `outcome` is `applied`, `missing` (no such
 *   task), `wrong_status` (`expect` did not hold) or `stale_token` (another run holds the task);
 *   nothing is written unless it is `applied`. `seq` is the last event's number, `status` the
 *   status after the commit.
 *
 * CREATE: KEYS = [task, events, ...index keys, idempotency key (if any)]; ARGV = [payload JSON]. Stores a
 * new record (its fields), adds it to the indexes given, and its first event if any; with an
 * idempotency key that already names a live task, it writes nothing and answers that task.
 * Returns `{outcome, id, status}`: `created`, or `existing` with the task the key named.
 *
 * Events are built here only (ENVELOPE): the stream owner's id and the next `seq` make the event's
 * id; `seq` increases by one per event of the stream, with no gaps; each event is also published on
 * the owner's channel for live followers. An event's `data` arrives as JSON text and is kept as it is.
 */

/** `{"id","taskId","rootId","seq","ts","type","agent"?,"worker"?,"step"?,"data"}`, then XADD and PUBLISH. */
const ENVELOPE = `
local function addEvents(task, eventsKey, channel, owner, rootId, ts, events)
  local seq = tonumber(redis.call('HGET', task, 'seq') or '0')
  for _, event in ipairs(events or {}) do
    seq = redis.call('HINCRBY', task, 'seq', 1)
    local text = '{"id":' .. cjson.encode(owner .. ':' .. seq) .. ',"taskId":' .. cjson.encode(event.taskId or owner)
      .. ',"rootId":' .. cjson.encode(rootId) .. ',"seq":' .. seq .. ',"ts":' .. cjson.encode(ts) .. ',"type":' .. cjson.encode(event.type)
    if event.agent then text = text .. ',"agent":' .. cjson.encode(event.agent) end
    if event.worker then text = text .. ',"worker":' .. cjson.encode(event.worker) end
    if event.step then text = text .. ',"step":' .. string.format('%d', event.step) end
    text = text .. ',"data":' .. event.data .. '}'
    redis.call('XADD', eventsKey, seq .. '-0', 'event', text)
    redis.call('PUBLISH', channel, text)
  end
  return seq
end
`;

export const COMMIT_SCRIPT = `${ENVELOPE}
local task, messagesKey, eventsKey, expiryKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local c = cjson.decode(ARGV[1])
local current = redis.call('HGET', task, 'status')
if not current then return {'missing', 0, '', '0'} end
local cancelRequested = redis.call('HGET', task, 'cancelRequested') or '0'
local seqNow = tonumber(redis.call('HGET', task, 'seq') or '0')
if c.expect then
  local allowed = false
  for _, status in ipairs(c.expect) do if status == current then allowed = true end end
  if not allowed then return {'wrong_status', seqNow, current, cancelRequested} end
end
-- A worker that lost its job (it stalled and another worker took over) may not write any more.
if c.runToken and redis.call('HGET', task, 'runToken') ~= c.runToken then
  return {'stale_token', seqNow, current, cancelRequested}
end
if c.status and c.status ~= current then
  if redis.call('HGET', task, 'listed') == '1' then
    local statuses = c.indexStatuses
    if not statuses or #KEYS < 4 + 2 * #statuses then return redis.error_reply('a status change of a submitted task needs its index keys') end
    local order = redis.call('HGET', task, 'order')
    for index, status in ipairs(statuses) do
      if status == current then
        redis.call('ZREM', KEYS[4 + index], c.taskId)
        redis.call('ZREM', KEYS[4 + #statuses + index], c.taskId)
      elseif status == c.status then
        redis.call('ZADD', KEYS[4 + index], order, c.taskId)
        redis.call('ZADD', KEYS[4 + #statuses + index], order, c.taskId)
      end
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
local rootId = redis.call('HGET', task, 'rootId') or c.taskId
local seq = addEvents(task, eventsKey, c.channel, c.taskId, rootId, c.ts, c.events)
return {'applied', seq, redis.call('HGET', task, 'status'), cancelRequested}
`;

export const CREATE_SCRIPT = `${ENVELOPE}
local task, eventsKey = KEYS[1], KEYS[2]
local c = cjson.decode(ARGV[1])
local idempotencyKey = c.idempotent and KEYS[#KEYS] or nil
if idempotencyKey then
  local existing = redis.call('GET', idempotencyKey)
  if existing then
    local status = redis.call('HGET', c.taskPrefix .. existing, 'status')
    if status then return {'existing', existing, status} end
  end
end
for name, value in pairs(c.fields) do redis.call('HSET', task, name, value) end
for index = 3, 2 + c.indexes do redis.call('ZADD', KEYS[index], c.order, c.taskId) end
addEvents(task, eventsKey, c.channel, c.taskId, c.fields.rootId, c.ts, c.events)
if idempotencyKey then redis.call('SET', idempotencyKey, c.taskId, 'PX', c.idempotencyTtlMs) end
return {'created', c.taskId, c.fields.status}
`;

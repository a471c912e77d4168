-- SAVE SCHEDULE: writes a schedule's record whole (the caller is schedule-store.ts, save), in the
-- schedules' cell, with its files when its task changed, its place in its tenant's list and in the list
-- of every tenant's, and its bytes in its tenant's count (tenant-bytes.ts), in one call.
--
-- KEYS: the record, its files, its tenant's list, every tenant's list, the order counter, the tenant's
-- byte counter; with `room` (one cell and a byte limit), the tenant's room keys for takeRoom (late keys).
-- ARGV: the payload (JSON): `mode` ('create', 'update' or 'migrate'), `id`, `bytes` (what it holds),
-- `fields` (the record's, but its order, bytes, revision and last run's task, which are the script's),
-- `revision` (update: the revision the change was made from), `files` (true: the files are replaced by
-- the arguments after it, path, content, ...), `maxSchedules` (create), `room`.
--
-- A create past `maxSchedules` of its tenant answers {'too_many', count}; a save that adds bytes past
-- the tenant's room answers {'no_room', bytes written and held}, writing nothing. An update of a record
-- that is gone answers {'gone'}; of one written since its `revision` was read, {'changed'}, writing
-- nothing (the caller reads it again: a change made from an old read would undo another, a pause say);
-- a migrate of a record already of this version, {'saved', order, revision} alone. Else {'saved',
-- order, revision}: a new record takes the next order, and every write the next revision.
-- @include take-room
local payload = cjson.decode(payloadJson)
local stored = redis.call('HMGET', scheduleKey, 'bytes', 'order', 'lastTaskId', 'revision')
local revision = tonumber(stored[4] or '0')
if payload.mode == 'create' then
  local count = redis.call('ZCARD', tenantSchedulesKey)
  if count >= payload.maxSchedules then return {'too_many', count} end
elseif payload.mode == 'update' then
  if not stored[2] then return {'gone'} end
  if revision ~= payload.revision then return {'changed'} end
elseif stored[2] then
  return {'saved', stored[2], revision}
end
local added = payload.bytes - tonumber(stored[1] or '0')
-- A schedule is no task: only its bytes take room (its task counts are not looked at).
if added > 0 and payload.room then
  payload.room.bytes = added
  local ok, _, _, written = takeRoom(payload.room, 0, added)
  if not ok then return {'no_room', written or -1} end
end
local order = stored[2] or string.format('%d', redis.call('INCR', orderKey))
revision = revision + 1
local fields = {'order', order, 'bytes', string.format('%d', payload.bytes), 'revision', string.format('%d', revision)}
for name, value in pairs(payload.fields) do
  fields[#fields + 1] = name
  fields[#fields + 1] = value
end
-- A firing may have written its task since the caller read the record.
if stored[3] then
  fields[#fields + 1] = 'lastTaskId'
  fields[#fields + 1] = stored[3]
end
-- Written whole: a field a change left out (a cron replaced by `every`) must not stay.
redis.call('DEL', scheduleKey)
redis.call('HSET', scheduleKey, unpack(fields))
if payload.files then
  redis.call('DEL', filesKey)
  if #ARGV >= ARGV_REST then redis.call('HSET', filesKey, unpack(ARGV, ARGV_REST)) end
end
redis.call('ZADD', tenantSchedulesKey, order, payload.id)
redis.call('ZADD', everyScheduleKey, order, payload.id)
if added ~= 0 and redis.call('INCRBY', bytesKey, string.format('%d', added)) <= 0 then redis.call('DEL', bytesKey) end
return {'saved', order, revision}

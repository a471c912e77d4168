-- COMMIT: the write path of a task's state, so that everything in a change lands together or not at
-- all (docs/storage.md, "The commit script"; the caller is task-store.ts).
--
-- KEYS (named): the task's record, messages and events; its root's record (budgets add up there); its
-- tenant's byte counter and spending of the day; then, sent only by a change of status, a pack, a claim
-- or a lease (commit-script.ts, `lateKeys`: nil in a step's commits, which touch none of them), its packed
-- events, the expiry and to-compact sets, its tenant's list of tasks, its webhook deliveries, its
-- tenant's set of due deliveries, the set of tenants with some, and the pending set of every task's
-- deliveries. ARGV: the payload (JSON),
-- the task's id, its tenant, its events' channel, and its event lines' text before their seq and between
-- their seq and body (run-events.ts, eventLineHead and eventLineRoot), then ARGV_REST on: each message to
-- append (JSON text), each event's body (JSON text), the fields to set (name, value, ...): what may be
-- long, and what every commit has, goes as it is, not inside the payload, so nothing decodes it (Lua's
-- JSON decoder costs Redis about 95 instructions a byte, an argument about 1,200 in all).
--
-- The payload may ask for a status change guarded by `expect` (the statuses it may change from), by
-- `expectSeq` (the last event's number the caller read), by `runToken` (the run that holds the
-- task) and, for a claim, by `expectJob` (the job that claims must be the record's `jobId`), and carry fields, counters to add (`add`: tokens, model time, cost), steps, messages and
-- events. A status change of a submitted task moves it to the new status's band (`band`) of its two
-- list (task-index.ts); a task that ends joins the to-compact set.
-- A status change the task's webhook asks for (its `webhookOn` names the status) adds a delivery, in
-- the same write: id `msg_<task>_<seq of the event>`, due now (webhook-deliveries.ts sends it).
-- With `lease` ({key, ms}: declared in KEYS too, at `lease.index`) the task is leased in its pool's
-- fair leases until its caller added its job; with `due` ({index, ms, member, jobId}: the pool's due set
-- and runs declared the same way, at index and index + 1) the task, as `member`, is due `ms` from now,
-- to run as job `jobId` (due-tasks.ts). A commit that appends messages or events adds what it
-- writes to the task's `bytes` and its tenant's count; past `tenantMaxBytes`, its stop is
-- 'tenant_bytes'. With `read`, also the record as it was (refused commits too) and, when applied, the
-- memory: a run's claim reads its task in the same round trip; with `holdEvents` too, whether the task
-- wrote at most PLAIN_MAX bytes, for the run to pack its events at its end (run-events.ts). A task's
-- events are its packed string (deflated; open: more parts may follow), up to the record's `packed`
-- seq, then its list. With `pack` ({seq, from}: the run's lines, from seq `from` + 1 on, 0 for all of
-- them, deflated and left open, are the last ARGV), an end commit that finds the task's last event at
-- `seq` (nothing written since the run's copy) writes the packed string again whole: what it held and
-- the list's lines before the run's as deflate's stored blocks (none for a first run, which holds them
-- all), then the run's; and publishes its own: no list is left, no compaction.
-- Else its events are added as any commit's, and it joins the to-compact set.
--
-- Answers {outcome, seq, status, stop, record?, messages?, delivery?, small?} (`record`: its names and
-- values, joined by byte 255 when the task wrote at most JOINED_MAX bytes; `delivery` 1: a webhook
-- delivery was added): `outcome` is 'applied', 'missing',
-- 'wrong_status' (`expect` did not hold) or 'stale_token' (another run holds the task, checked first);
-- nothing is written unless it is 'applied'. `stop` says why the run should stop: '1' a cancel was
-- asked for, 'budget', 'tenant_limit', 'tenant_bytes', or '0'.
--
-- The hash is read once and written once (one HMGET or HGETALL, one HSET): the commands a task costs
-- Redis are counted in CI (tests/integration/redis-budget.test.ts). Whole numbers go to Redis as
-- strings made with '%d' (Redis formats a Lua number with '%.17g', which costs more).
-- @include add-events
-- @include stored-blocks
-- @include now-ms
-- @include spending-stop
local payload = cjson.decode(payloadJson)
local record, fields
if payload.read then
  fields = {}
  local flat = redis.call('HGETALL', taskKey)
  for index = 1, #flat, 2 do fields[flat[index]] = flat[index + 1] end
  -- A small task's record is answered as one string, its names and values joined by a byte UTF-8 never
  -- has (255): Redis turns each string of a table a script answers into a reply at about 1K instructions
  -- (a record's 30, about 30K a claim). A large one's is not: the string would cost Lua's collector
  -- about 15 instructions a byte (10 KB of prompt, 150K). (`bytes`: what the task wrote, its record first)
  record = tonumber(fields.bytes or '0') <= JOINED_MAX and table.concat(flat, '\255') or flat
else
  -- What the script reads, and the counters the commit adds to. A record is a listpack, which HMGET
  -- searches field by field (about 2K instructions each): what only a change of status or a pack reads
  -- is read only then. Its table is made with room for them (false: not there, as HMGET answers): a
  -- table grown key by key is rebuilt at each power of two.
  fields = {
    status = false, cancelRequested = false, seq = false, runToken = false, budgeted = false, tenant = false,
    bytes = false, followed = false, listed = false, order = false, webhookOn = false, packed = false,
  }
  local names = {'status', 'cancelRequested', 'seq', 'runToken', 'budgeted', 'tenant', 'bytes', 'followed'}
  if payload.status then
    names[#names + 1], names[#names + 2], names[#names + 3] = 'listed', 'order', 'webhookOn'
  end
  if payload.pack then names[#names + 1] = 'packed' end
  for name in pairs(payload.add or {}) do names[#names + 1] = name end
  local values = redis.call('HMGET', taskKey, unpack(names))
  for index = 1, #names do fields[names[index]] = values[index] end
end
local current = fields.status
if not current then return {'missing', 0, '', '0'} end
-- The keys were declared for the tenant the caller named: they must be this task's.
if (fields.tenant or 'default') ~= tenant then
  return redis.error_reply('commit of task ' .. taskId .. ' declared tenant ' .. tenant .. ', but it is ' .. (fields.tenant or 'default') .. "'s")
end
local cancelRequested = fields.cancelRequested or '0'
local seq = tonumber(fields.seq or '0')
-- A worker that lost its job (it stalled or was cut off, and another worker took over) may not write
-- any more, whatever the task became since (said first: the task may have ended on the other worker).
if payload.runToken and fields.runToken ~= payload.runToken then
  return {'stale_token', seq, current, cancelRequested, record}
end
-- A claim by a job that is not the task's current one (read mode: the record is at hand).
if payload.expectJob and payload.expectJob ~= ((fields.jobId or '') ~= '' and fields.jobId or taskId) then
  return {'wrong_status', seq, current, cancelRequested, record}
end
if payload.expect then
  local allowed = false
  for _, status in ipairs(payload.expect) do if status == current then allowed = true end end
  if not allowed then return {'wrong_status', seq, current, cancelRequested, record} end
end
-- A change made from what the caller read (a decision among several): only if nothing came between.
if payload.expectSeq and payload.expectSeq ~= seq then return {'wrong_status', seq, current, cancelRequested, record} end
-- The run's copy of its events is whole: nothing was written since it was made. The packed string
-- holds the events up to `packed` (left open), the list the rest. A first run holds every event: its
-- lines are the packed string. Another's follow the packed string and the list's lines before the
-- run's, taken with one LPOP (which removes the list) and kept as they are. If the list was not every
-- event after `packed` (compacted since: the field is then behind), or those lines are too much to keep
-- uncompressed, they go back, and the task is compacted once it ended.
local packing, before, whole = false, nil, false
if payload.pack and payload.pack.seq == seq then
  local open, from = tonumber(fields.packed or '0'), payload.pack.from
  if from == 0 then
    -- The run holds every event (a first run: its claim read the first): they are the packed string.
    whole, before = true, ''
    if seq > open then redis.call('DEL', eventsKey) end
  elseif seq == open then
    before = ''
  elseif from >= open then
    local taken = redis.call('LPOP', eventsKey, seq - open)
    if taken and #taken == seq - open then
      before = from > open and table.concat(taken, '\n', 1, from - open) .. '\n' or ''
      if #before > PLAIN_MAX then before = nil end
    end
    if taken and not before then callMany('RPUSH', eventsKey, taken) end
  end
  packing = before ~= nil
end
local blobs = payload.pack and 1 or 0
local stop = spendingStop(payload, fields, rootKey, spendKey)
-- What a commit that appends messages or events writes (them and its fields) adds to the task's bytes
-- and its tenant's count (tenant-bytes.ts); past the tenant's byte limit, its runs stop (a claim too:
-- a queued task of a tenant past it makes no model call).
local written, total = 0, nil
if (payload.messages or 0) + (payload.events or 0) > 0 then
  for index = ARGV_REST, #ARGV - blobs do written = written + #ARGV[index] end
  total = redis.call('INCRBY', tenantBytesKey, written)
end
-- (`others`: what the tenant's tasks hold in the other cells, as the caller read it: tenant-totals.ts)
if payload.tenantMaxBytes and stop == '0'
  and (total or tonumber(redis.call('GET', tenantBytesKey) or '0')) + (payload.others and payload.others.bytes or 0) > payload.tenantMaxBytes then
  stop = 'tenant_bytes'
end
-- Why the run should stop at its next step: a cancel first, else a spent budget or limit.
if cancelRequested == '0' then cancelRequested = stop end
local set = {}
local function put(name, value)
  set[#set + 1] = name
  set[#set + 1] = value
end
local status = current
if payload.status and payload.status ~= current then
  if fields.listed == '1' then
    -- Into the new status's band of its tenant's list (task-index.ts).
    redis.call('ZADD', tenantTasksKey, string.format('%d', payload.band * STATUS_SPAN + tonumber(fields.order)), taskId)
    -- A submitted task that ended is removed with its subtasks once its retention is over.
    if payload.expireAt then redis.call('ZADD', expiryKey, string.format('%d', payload.expireAt), taskId) end
  end
  status = payload.status
  put('status', status)
  -- Its event stream is compacted once it ended (compact-events.ts), unless this commit packs it.
  if payload.expireAt and not packing then redis.call('ZADD', toCompactKey, '0', taskId) end
end
local messageCount, eventCount = payload.messages or 0, payload.events or 0
-- The fields to set, name and value, after the messages and the events' bodies (a result may be long).
local fieldsFrom = ARGV_REST + messageCount + eventCount
for index = fieldsFrom, fieldsFrom + (payload.fields or 0) - 1, 2 do put(ARGV[index], ARGV[index + 1]) end
-- The copy of its first event is for its first run's claim, which this is if it has one (the caller
-- has it in the record answered): emptied, in the write the claim makes anyway.
if payload.read and fields.first and fields.first ~= '' then put('first', '') end
-- (read mode only: the record is at hand)
if payload.firstTime then
  for name, value in pairs(payload.firstTime) do if not fields[name] then put(name, value) end end
end
-- Counters (tokens, model time, cost): whole numbers, added to the task's.
for name, value in pairs(payload.add or {}) do put(name, string.format('%d', tonumber(fields[name] or '0') + value)) end
if payload.steps then put('steps', string.format('%d', payload.steps)) end
local messages
if payload.read and tonumber(fields.memory or '1') > 0 then messages = redis.call('LRANGE', messagesKey, 0, -1) end
if messageCount > 0 then
  put('memory', string.format('%d', redis.call('RPUSH', messagesKey, unpack(ARGV, ARGV_REST, ARGV_REST + messageCount - 1))))
end
-- Published only for a task someone followed (event-hub.ts): most of a batch's never are.
local channel = fields.followed == '1' and eventsChannel or nil
local last = addEvents(not packing and eventsKey or nil, channel, lineHead, lineRoot, seq, ARGV_REST + messageCount, eventCount, payload.publish)
if packing then
  -- Written whole, not with APPEND: an appended string keeps twice its length allocated (Redis grows it
  -- for more appends), which doubled what an ended task's events hold (B8: 1,000 -> 2,150 bytes).
  local text = whole and ARGV[#ARGV] or (redis.call('GET', packedKey) or '') .. storedBlocks(before) .. ARGV[#ARGV]
  redis.call('SET', packedKey, text)
  put('packed', string.format('%d', last))
end
if last ~= seq then put('seq', string.format('%d', last)) end
if written > 0 then put('bytes', string.format('%d', tonumber(fields.bytes or '0') + written)) end
if #set > 0 then redis.call('HSET', taskKey, unpack(set)) end
local delivery = false
if status ~= current and fields.webhookOn and string.find(fields.webhookOn, ',' .. status .. ',', 1, true) then
  delivery = 1
  local now = nowMs()
  local id = 'msg_' .. taskId .. '_' .. string.format('%d', last)
  redis.call('HSET', webhooksKey, id, cjson.encode({event = 'task.' .. status, createdAt = now}))
  redis.call('ZADD', webhooksDueKey, string.format('%d', now), id)
  redis.call('SADD', webhookTenantsKey, tenant)
  redis.call('ZADD', webhooksPendingKey, string.format('%d', now), id)
end
if payload.lease then
  redis.call('ZADD', KEYS[payload.lease.index], string.format('%d', nowMs() + payload.lease.ms), taskId)
end
if payload.due then
  redis.call('ZADD', KEYS[payload.due.index], string.format('%d', nowMs() + payload.due.ms), payload.due.member)
  redis.call('HSET', KEYS[payload.due.index + 1], taskId, payload.due.jobId)
end
if payload.read then
  local small = payload.holdEvents and tonumber(fields.bytes or '0') + written <= PLAIN_MAX and 1
  return {'applied', last, status, cancelRequested, record, messages or {}, delivery, small or false}
end
-- (false is a nil reply: a 7th element is there only when a delivery was added)
if delivery then return {'applied', last, status, cancelRequested, false, false, delivery} end
return {'applied', last, status, cancelRequested}

-- CREATE: stores new tasks (the caller is task-store.ts, create), each with its first event if any,
-- in its lists, and (a listed task ready to run) in its tenant's list for its pool, in one call, so
-- that a process that dies right after leaves no task that nothing will run.
--
-- KEYS: the order counter (named), then from KEYS_REST, as the payload's indexes say: for each task
-- its record, its packed events (the key after its record's), its lists (its tenant's, its batch's if any), its
-- idempotency key if any, and the task that key named when the caller read it (`existing`); then the
-- fair arrival counter and, per tenant's list the ready tasks join (`lists`), that list and its pool's
-- ring; the room's keys (`room`); each tenant's byte counter (`counters`, by tenant); the set of
-- tenants (`tenants.key`, with the `names` of those whose tasks are listed); for a task that
-- names a concurrency key, its key's queue (`gate`), and the set of keys with waiting tasks (`gatePending`).
-- ARGV: the payload (JSON), then from ARGV_REST, for each task its fields (name, value, ...; `fields`
-- says how many), its packed events if it has a first event (the event's line as deflate's stored blocks,
-- task-events.ts), and its input files (path, content, ...; `inputs`
-- says how many arguments, stored in its `inputs` key): kept out of the payload, so not decoded.
--
-- The payload's `tasks` say what each task has; what all of them mostly say alike comes once, in
-- `shared`, which a task's entry overrides (false: it has none).
--
-- Listed tasks take their `order` from the counter, in their order (with several cells, the caller
-- took them from the install's counter: `orders`, one per listed task), and their status's `band` in their
-- tenant's list. With `room`, the listed tasks must fit in their tenant's room first (tenant-room.ts),
-- else nothing is written and it answers {{'no_room', unfinished, stored, bytes written}}. Each created
-- task's `bytes` is its record's and adds to its tenant's count. A task whose idempotency key names a
-- live task writes nothing and answers that task; a key that names another task than the one the
-- caller read (a submit with the same key at the same moment) answers {{'reread'}} before anything is
-- written, for the caller to read and call again; a key that names a live task made from another body
-- (its `digest` differs) answers {'mismatch', the new task's id, the task the key names} for each such
-- task, before anything is written. Answers, per task, {outcome, id, status}: 'created', or 'existing'
-- with the task the key named.
-- @include join-tenant-list
-- @include take-room
local payload = cjson.decode(payloadJson)
-- What the batch's tasks say alike is said once (task-store.ts, saidOnce): each task's default.
if payload.shared then
  local defaults = {__index = payload.shared}
  for _, task in ipairs(payload.tasks) do setmetatable(task, defaults) end
end
-- The idempotency keys first, before anything is written: each must still hold what the caller read
-- (`existing.value`: its task id and its body's digest). A key that names a live task made from another
-- body refuses the call (a key stored before keys held a digest matches any body).
local mismatches = {}
for _, task in ipairs(payload.tasks) do
  if task.idempotency then
    local named = redis.call('GET', KEYS[task.idempotency]) or false
    local existing = task.existing
    if named ~= (existing and existing.value or false) then return {{'reread'}} end
    if existing and existing.digest and task.digest and existing.digest ~= task.digest
      and redis.call('EXISTS', KEYS[existing.key]) == 1 then
      mismatches[#mismatches + 1] = {'mismatch', task.taskId, existing.id}
    end
  end
end
if #mismatches > 0 then return mismatches end
local answers = {}
-- Per tenant's list (payload.lists), the created tasks that join it, and their priorities.
local joining = {}
for index = 1, #(payload.lists or {}) do joining[index] = {ids = {}, priorities = {}} end
local arg = ARGV_REST
-- The listed tasks' places in the lists, taken at once from the counter (so tasks created in one
-- millisecond keep their order); a task that turns out to exist already leaves its number unused.
-- (A child made once, which is in no list, takes room for its bytes only.)
local listed, listedBytes = 0, 0
for _, task in ipairs(payload.tasks) do
  if task.listed then listed = listed + 1 end
  if task.listed or task.once then listedBytes = listedBytes + task.bytes end
end
-- Room in the tenant's limits (tenant-room.ts), taken before anything is written.
if payload.room then
  local ok, unfinished, stored, written = takeRoom(payload.room, listed, listedBytes)
  if not ok then return {{'no_room', unfinished or -1, stored or -1, written or -1}} end
end
-- What the created tasks write, per tenant (tenant-bytes.ts).
local added = {}
-- The tasks this call created, by idempotency key: a key given twice in one call creates one task.
local createdFor = {}
local order = listed > 0 and not payload.orders and redis.call('INCRBY', orderCounterKey, listed) - listed or 0
local listedIndex = 0
for index, task in ipairs(payload.tasks) do
  if task.listed then
    listedIndex = listedIndex + 1
    order = payload.orders and payload.orders[listedIndex] or order + 1
  end
  local status = task.existing and redis.call('HGET', KEYS[task.existing.key], 'status')
  -- A task made at most once (a delegated child, keyed by its parent's call) that exists answers itself.
  local made = task.once and redis.call('HGET', KEYS[task.record], 'status')
  local earlier = task.idempotency and createdFor[KEYS[task.idempotency]]
  if made then
    answers[index] = {'existing', task.taskId, made}
  elseif status then
    answers[index] = {'existing', task.existing.id, status}
  elseif earlier then
    answers[index] = {'existing', earlier.id, earlier.status}
  else
    local fields = {unpack(ARGV, arg, arg + task.fields - 1)}
    if task.listed then
      fields[#fields + 1] = 'listed'
      fields[#fields + 1] = '1'
      fields[#fields + 1] = 'order'
      fields[#fields + 1] = string.format('%d', order)
    end
    if task.events > 0 then
      fields[#fields + 1] = 'seq'
      fields[#fields + 1] = string.format('%d', task.events)
      -- (its packed string holds its events up to this seq; its list, any after)
      fields[#fields + 1] = 'packed'
      fields[#fields + 1] = string.format('%d', task.events)
    end
    fields[#fields + 1] = 'bytes'
    fields[#fields + 1] = string.format('%d', task.bytes)
    added[task.tenant] = (added[task.tenant] or 0) + task.bytes
    redis.call('HSET', KEYS[task.record], unpack(fields))
    -- Its tenant's list holds its status's band in the score; its batch's, only the order.
    for position, list in ipairs(task.lists) do
      redis.call('ZADD', KEYS[list], string.format('%d', position == 1 and task.band * STATUS_SPAN + order or order), task.taskId)
    end
    -- Nobody follows a task that did not exist a moment ago: its first event is stored, not published,
    -- as its packed string, which the caller made (left open: the run that ends the task writes it again
    -- with its own lines after, and a single-step task's list is never made, commit.lua).
    if task.events > 0 then redis.call('SET', KEYS[task.record + 1], ARGV[arg + task.fields]) end
    if task.inputs then
      local from = arg + task.fields + task.events
      redis.call('HSET', KEYS[task.inputsKey], unpack(ARGV, from, from + task.inputs - 1))
    end
    if task.idempotency then
      redis.call('SET', KEYS[task.idempotency], task.idempotencyValue, 'PX', payload.idempotencyTtlMs)
      createdFor[KEYS[task.idempotency]] = {id = task.taskId, status = task.status}
    end
    if task.wait then
      local join = joining[task.wait]
      join.ids[#join.ids + 1] = task.taskId
      join.priorities[#join.priorities + 1] = task.priority
    end
    -- A task that names a concurrency key waits in its key's queue, in submit order, for its gate.
    if task.gate then
      redis.call('ZADD', KEYS[task.gate], string.format('%d', order), task.taskId)
      redis.call('SADD', KEYS[payload.gatePending], task.gateBase)
    end
    answers[index] = {'created', task.taskId, task.status}
  end
  arg = arg + task.fields + task.events + (task.inputs or 0)
end
for index, list in ipairs(payload.lists or {}) do
  joinTenantList(KEYS[list.ring], KEYS[list.list], KEYS[payload.arrivals], list.tenant, joining[index].ids, joining[index].priorities)
end
-- The tenants with listed tasks, for an admin's list of every tenant's (task-index.ts).
if payload.tenants then redis.call('SADD', KEYS[payload.tenants.key], unpack(payload.tenants.names)) end
for tenant, bytes in pairs(added) do redis.call('INCRBY', KEYS[payload.counters[tenant]], string.format('%d', bytes)) end
return answers

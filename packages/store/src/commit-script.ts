/**
 * The write path of a task's state, as Lua scripts, so that everything in a change lands together or
 * not at all. The contract (docs/DESIGN.md, "The commit script"):
 *
 * COMMIT: KEYS = [task, messages, events, expiry, to-compact, then for a status change of a submitted task
 * its lists: every tenant's, its tenant's]; ARGV = [payload JSON, then
 * each message to append (JSON text), then each event's body (JSON text, below), then the fields to
 * set (name, value, ...)]: what may be long goes as it is, not inside the payload, so nothing decodes
 * it (Lua's JSON decoder costs Redis about 40 instructions a byte, an argument about 12).
 * - The payload may ask for a status change guarded by `expect` (the statuses it may change from)
 *   and by `runToken` (the run that holds the task), and carry fields, counters to add to the task's
 *   (`add`: tokens, model time, cost), steps, messages to append and events to add. A status change
 *   of a submitted task moves it to the new status's band (`band`) of its two lists (task-index.ts).
 *   A task that ends is put in the to-compact set (its events are compacted later, compact-events.ts).
 *   With `lease` (`{key, ms}`), the task is leased in its pool's fair leases until its caller added its
 *   job (an answered task's: fair-admission.ts, recover).
 * - A commit that appends messages or events adds what it writes (their bytes and its fields') to the
 *   task's `bytes` and to its tenant's count (tenant-bytes.ts); past `tenantMaxBytes`, its stop is
 *   'tenant_bytes'.
 * - A budgeted task's spending adds up at its root, and the tenant's per day with tenant limits
 *   (SPENDING).
 * - Returns `{outcome, seq, status, stop, record?, messages?}`: `outcome` is `applied`,
 *   `missing` (no such task), `wrong_status` (`expect` did not hold) or `stale_token` (another run
 *   holds the task, checked first); nothing is written unless it is `applied`. `seq` is the last event's number,
 *   `status` the status after the commit, `stop` why its run should stop: '1' a cancel was asked
 *   for, 'budget' its root's budget is spent, 'tenant_limit' its tenant's daily limit, 'tenant_bytes'
 *   its tenant's byte limit (AGENTQ_TENANT_MAX_MB), '0' none.
 *   With `read`, also the record as it was before the commit (flat field/value pairs; refused
 *   commits too) and, when applied, its memory: a run's claim reads
 *   its task in the same round trip.
 *
 * CREATE: KEYS = [the order counter, then for each task: task, events, ...its lists (every tenant's,
 * its tenant's, its batch's if any), its idempotency key (if any); then, when tasks are ready to run, the
 * fair arrival counter and per tenant's list (payload `lists`) that list and its pool's ring]; listed
 * tasks take their `order` from the counter, in their order, and their status's `band` in the first two
 * lists; with `room` (its keys after the tasks'), the listed tasks must fit in their tenant's room first
 * (tenant-room.ts), else nothing is written and it answers `{{'no_room', unfinished, stored, bytes written}}`;
 * each created task's `bytes` (tenant-bytes.ts, createdBytes) is its record's and adds to its tenant's count; a created
 * task with `wait` joins that tenant's list (fair-lists.ts) with its `priority`;
 * ARGV = [payload JSON, then for each task its fields (name, value, ...; `fields` in the payload says
 * how many) and its first event's body if any]: kept out of the payload, so not decoded. Stores each
 * new record (its fields), adds it to its indexes, and its first event if any; a task whose idempotency
 * key already names a live task writes nothing and answers that task. Returns, per task,
 * `{outcome, id, status}`: `created`, or `existing` with the task the key named.
 *
 * Events are numbered here only (ENVELOPE): the owner's id and the next `seq` make the event's id;
 * `seq` increases by one per event of the task, with no gaps. The writer sends the rest of each event
 * as its body: `"taskId":…,"ts":…,"type":…`, then `agent`, `worker`, `step` when it has them, then
 * `"data":…}`; the script puts `{"id":…,"seq":…,"rootId":…,` in front of it. The events of one write
 * are appended to the task's list of events (one element each, so the element at index `seq - 1` is
 * event `seq`; a list costs Redis a fraction of what a new stream does) and are one message on the
 * owner's channel (one JSON event per line), so a write costs one RPUSH and one PUBLISH however many
 * events it has. An event's body, and so its `data`, is kept as the writer sent it.
 *
 * Each script reads the hash once and writes it once (one HMGET or HGETALL, one HSET): the commands
 * a task costs Redis are counted in CI (tests/integration/redis-budget.test.ts). Whole numbers go to
 * Redis as strings made with `'%d'`: Redis formats a Lua number with `%.17g`, which costs more.
 */

import { JOIN_TENANT_LIST } from './fair-lists.js';
import { CALL_MANY } from './lua-call-many.js';
import { STATUS_SPAN, UNFINISHED_MAX_SCORE } from './task-index.js';
import { TAKE_ROOM } from './tenant-room.js';

/**
 * Appends the events whose bodies are ARGV[first] to ARGV[first + count - 1]: one RPUSH (an element per
 * event) and one PUBLISH; returns the new last `seq`. A body is the writer's JSON text of an event's
 * fields after `id`, `seq` and `rootId` (task-store.ts, eventBody), so a line costs one concatenation:
 * Lua's cjson and number formatting, per field, were most of a commit's cost to Redis.
 */
const ENVELOPE = `${CALL_MANY}
local function addEvents(eventsKey, channel, owner, rootId, seq, first, count)
  if count == 0 then return seq end
  local lines = {}
  local head = '{"id":' .. string.sub(cjson.encode(owner .. ':'), 1, -2)
  local root = ',"rootId":' .. cjson.encode(rootId) .. ','
  for index = 1, count do
    seq = seq + 1
    local number = string.format('%d', seq)
    lines[index] = head .. number .. '","seq":' .. number .. root .. ARGV[first + index - 1]
  end
  callMany('RPUSH', eventsKey, lines)
  if channel then redis.call('PUBLISH', channel, table.concat(lines, '\\n')) end
  return seq
end
`;

/**
 * Spending against budgets. A budgeted task's tokens and cost add up at its root (`spentTokens`,
 * `spentMicroUsd`), and every commit of the tree, a claim too, reads whether the root's budget is
 * spent. With tenant limits (`c.tenantLimits`, by tenant or '*'), the tenant's spending adds up per
 * UTC day in a hash kept two days. Answers 'budget', 'tenant_limit' or '0'.
 */
const SPENDING = `
local function spendingStop(c, fields, rootId)
  local add = c.add or {}
  local tokens = (add.promptTokens or 0) + (add.completionTokens or 0)
  local micro = add.costMicroUsd or 0
  local stop = '0'
  if fields.budgeted == '1' then
    local root = c.taskPrefix .. (rootId or c.taskId)
    if tokens > 0 then redis.call('HINCRBY', root, 'spentTokens', tokens) end
    if micro > 0 then redis.call('HINCRBY', root, 'spentMicroUsd', micro) end
    local b = redis.call('HMGET', root, 'budgetTokens', 'budgetMicroUsd', 'spentTokens', 'spentMicroUsd')
    if (b[1] and tonumber(b[3] or '0') >= tonumber(b[1])) or (b[2] and tonumber(b[4] or '0') >= tonumber(b[2])) then stop = 'budget' end
  end
  local limit = c.tenantLimits and (c.tenantLimits[fields.tenant or 'default'] or c.tenantLimits['*'])
  if limit then
    local day = c.spendPrefix .. (fields.tenant or 'default') .. ':' .. string.sub(c.ts, 1, 10)
    local created = false
    if tokens > 0 then created = redis.call('HINCRBY', day, 'tokens', tokens) == tokens end
    if micro > 0 then created = (redis.call('HINCRBY', day, 'microUsd', micro) == micro) or created end
    if created then redis.call('EXPIRE', day, 172800) end
    local s = redis.call('HMGET', day, 'tokens', 'microUsd')
    if (limit.tokens and tonumber(s[1] or '0') >= limit.tokens) or (limit.microUsd and tonumber(s[2] or '0') >= limit.microUsd) then stop = 'tenant_limit' end
  end
  return stop
end
`;

export const COMMIT_SCRIPT = `${ENVELOPE}${SPENDING}
local task, messagesKey, eventsKey, expiryKey, toCompactKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local c = cjson.decode(ARGV[1])
local record
local fields = {}
if c.read then
  record = redis.call('HGETALL', task)
  for index = 1, #record, 2 do fields[record[index]] = record[index + 1] end
else
  -- What the script reads, and the counters the commit adds to.
  local names = {'status', 'cancelRequested', 'seq', 'runToken', 'listed', 'order', 'rootId', 'memory', 'budgeted', 'tenant', 'bytes'}
  for name in pairs(c.add or {}) do names[#names + 1] = name end
  local h = redis.call('HMGET', task, unpack(names))
  for index, name in ipairs(names) do fields[name] = h[index] end
end
local current, cancelRequested, seqText, runToken, listed, order, rootId, memory =
  fields.status, fields.cancelRequested, fields.seq, fields.runToken, fields.listed, fields.order, fields.rootId, fields.memory
if not current then return {'missing', 0, '', '0'} end
cancelRequested = cancelRequested or '0'
local seq = tonumber(seqText or '0')
-- A worker that lost its job (it stalled or was cut off, and another worker took over) may not write
-- any more, whatever the task became since (said first: the task may have ended on the other worker).
if c.runToken and runToken ~= c.runToken then
  return {'stale_token', seq, current, cancelRequested, record}
end
if c.expect then
  local allowed = false
  for _, status in ipairs(c.expect) do if status == current then allowed = true end end
  if not allowed then return {'wrong_status', seq, current, cancelRequested, record} end
end
local stop = spendingStop(c, fields, rootId)
-- What a commit that appends messages or events writes (them and its fields) adds to the task's bytes
-- and its tenant's count (tenant-bytes.ts); past the tenant's byte limit, its runs stop (a claim too:
-- a queued task of a tenant past it makes no model call).
local written, total = 0, nil
local tenantBytes = c.tenantPrefix .. (fields.tenant or 'default') .. ':bytes'
if (c.messages or 0) + (c.events or 0) > 0 then
  for index = 2, #ARGV do written = written + #ARGV[index] end
  total = redis.call('INCRBY', tenantBytes, written)
end
if c.tenantMaxBytes and stop == '0' and (total or tonumber(redis.call('GET', tenantBytes) or '0')) > c.tenantMaxBytes then stop = 'tenant_bytes' end
-- Why the run should stop at its next step: a cancel first, else a spent budget or limit.
if cancelRequested == '0' then cancelRequested = stop end
local set = {}
local function put(name, value)
  set[#set + 1] = name
  set[#set + 1] = value
end
local status = current
if c.status and c.status ~= current then
  if listed == '1' then
    if not c.band or #KEYS < 7 then return redis.error_reply('a status change of a submitted task needs its index keys') end
    -- Into the new status's band of both its lists (task-index.ts).
    local score = string.format('%d', c.band * ${STATUS_SPAN} + tonumber(order))
    redis.call('ZADD', KEYS[6], score, c.taskId)
    redis.call('ZADD', KEYS[7], score, c.taskId)
    -- A submitted task that ended is removed with its subtasks once its retention is over.
    if c.expireAt then redis.call('ZADD', expiryKey, string.format('%d', c.expireAt), c.taskId) end
  end
  status = c.status
  put('status', status)
  -- Its event stream is compacted once it ended (compact-events.ts).
  if c.expireAt then redis.call('ZADD', toCompactKey, '0', c.taskId) end
end
-- The fields to set, name and value, after the messages and the events' bodies (a result may be long).
local fieldsFrom = 2 + (c.messages or 0) + (c.events or 0)
for index = fieldsFrom, fieldsFrom + (c.fields or 0) - 1, 2 do put(ARGV[index], ARGV[index + 1]) end
-- (read mode only: the record is at hand)
if c.firstTime then
  for name, value in pairs(c.firstTime) do if not fields[name] then put(name, value) end end
end
-- Counters (tokens, model time, cost): whole numbers, added to the task's.
for name, value in pairs(c.add or {}) do put(name, string.format('%d', tonumber(fields[name] or '0') + value)) end
if c.steps then put('steps', string.format('%d', c.steps)) end
local messages
if c.read and tonumber(memory or '1') > 0 then messages = redis.call('LRANGE', messagesKey, 0, -1) end
local messageCount = c.messages or 0
if messageCount > 0 then
  put('memory', string.format('%d', redis.call('RPUSH', messagesKey, unpack(ARGV, 2, 1 + messageCount))))
end
local last = addEvents(eventsKey, c.channel, c.taskId, rootId or c.taskId, seq, 2 + messageCount, c.events or 0)
if last ~= seq then put('seq', string.format('%d', last)) end
if written > 0 then put('bytes', string.format('%d', tonumber(fields.bytes or '0') + written)) end
if #set > 0 then redis.call('HSET', task, unpack(set)) end
if c.lease then
  local t = redis.call('TIME')
  redis.call('ZADD', c.lease.key, string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + c.lease.ms), c.taskId)
end
if c.read then return {'applied', last, status, cancelRequested, record, messages or {}} end
return {'applied', last, status, cancelRequested}
`;

export const CREATE_SCRIPT = `${ENVELOPE}${JOIN_TENANT_LIST}${TAKE_ROOM(UNFINISHED_MAX_SCORE)}
local c = cjson.decode(ARGV[1])
local answers = {}
-- Per tenant's list (c.lists), the created tasks that join it, and their priorities.
local joining = {}
for index = 1, #(c.lists or {}) do joining[index] = {ids = {}, priorities = {}} end
local next = 2
-- The next task's first argument: its fields, then its event's body.
local arg = 2
-- The listed tasks' places in the lists, taken at once from the counter (so tasks created in one
-- millisecond keep their order); a task that turns out to exist already leaves its number unused.
local listed, listedBytes = 0, 0
for _, t in ipairs(c.tasks) do
  if t.listed then
    listed = listed + 1
    listedBytes = listedBytes + t.bytes
  end
end
-- Room in the tenant's limits (tenant-room.ts), taken before anything is written.
if c.room then
  local ok, unfinished, stored, written = takeRoom(c.room, listed, listedBytes)
  if not ok then return {{'no_room', unfinished or -1, stored or -1, written or -1}} end
end
-- What the created tasks write, per tenant (tenant-bytes.ts).
local added = {}
local order = listed > 0 and redis.call('INCRBY', KEYS[1], listed) - listed or 0
for index, t in ipairs(c.tasks) do
  if t.listed then order = order + 1 end
  local task, eventsKey = KEYS[next], KEYS[next + 1]
  local idempotencyKey = t.idempotent and KEYS[next + 2 + t.indexes] or nil
  local existing = idempotencyKey and redis.call('GET', idempotencyKey)
  local status = existing and redis.call('HGET', c.taskPrefix .. existing, 'status')
  if status then
    answers[index] = {'existing', existing, status}
  else
    local fields = {unpack(ARGV, arg, arg + t.fields - 1)}
    if t.listed then
      fields[#fields + 1] = 'listed'
      fields[#fields + 1] = '1'
      fields[#fields + 1] = 'order'
      fields[#fields + 1] = string.format('%d', order)
    end
    if t.events > 0 then
      fields[#fields + 1] = 'seq'
      fields[#fields + 1] = string.format('%d', t.events)
    end
    fields[#fields + 1] = 'bytes'
    fields[#fields + 1] = string.format('%d', t.bytes)
    added[t.tenant] = (added[t.tenant] or 0) + t.bytes
    redis.call('HSET', task, unpack(fields))
    -- Its lists (every tenant's, its tenant's) hold its status's band in the score; its batch's, only the order.
    for i = 1, t.indexes do
      redis.call('ZADD', KEYS[next + 1 + i], string.format('%d', i <= 2 and t.band * ${STATUS_SPAN} + order or order), t.taskId)
    end
    -- Nobody follows a task that did not exist a moment ago: its first event is stored, not published.
    addEvents(eventsKey, nil, t.taskId, t.rootId, 0, arg + t.fields, t.events)
    if idempotencyKey then redis.call('SET', idempotencyKey, t.taskId, 'PX', c.idempotencyTtlMs) end
    if t.wait then
      local j = joining[t.wait]
      j.ids[#j.ids + 1] = t.taskId
      j.priorities[#j.priorities + 1] = t.priority
    end
    answers[index] = {'created', t.taskId, t.status}
  end
  next = next + 2 + t.indexes + (t.idempotent and 1 or 0)
  arg = arg + t.fields + t.events
end
for index, l in ipairs(c.lists or {}) do
  joinTenantList(KEYS[l.ring], KEYS[l.list], KEYS[c.arrivals], l.tenant, joining[index].ids, joining[index].priorities)
end
for tenant, bytes in pairs(added) do redis.call('INCRBY', c.tenantPrefix .. tenant .. ':bytes', string.format('%d', bytes)) end
return answers
`;

-- A turn of fair admission for a pool (fair-admission.ts). First the joining tenant's new tasks (ARGV
-- after the tenants: id, priority, ...) go into its list (priority first, then arrival) and the
-- tenant joins the ring at its least virtual time. Then (with `admit` '1') what fits under the
-- backlog (the queue's waiting jobs and the leased ones count) is popped, the tenant of least virtual
-- time first, and leased. The head tenant takes as many at once as keep it at or below the next
-- tenant's virtual time (the same turns as one at a time, in fewer commands). While the queue still
-- holds a batch's worth, fewer than a batch are not worth a cycle's round trips: it waits for more room.
--
-- Each tenant's list is declared: KEYS from KEYS_REST hold the lists of the `tenants` named in ARGV
-- from ARGV_REST (the joining tenant's among them). A tenant at the head of the ring whose list the
-- caller did not declare (it joined since the caller last read the ring) ends the turn, answered as
-- `unknown` for the caller to read the ring and turn again.
--
-- Before a turn, tasks whose wait is over (`dueKey`: a run that waited for an outage, a retry's backoff,
-- a shared limit; due-tasks.ts) go back into their tenant's list at their priority: they take their
-- turns as any task, and hold no queue slot while they wait; their next run's job id is in `runsKey`
-- (the requeue's commit put it there). A due task of a tenant whose list was not declared stays due, and is answered among `unknown`.
--
-- Answers {popped, unknown}: popped is each admitted task as id, tenant, job id ('' for the task's
-- id); unknown is 1 when the caller should read the ring again, or the tenants of due tasks it did not
-- declare, or 0.
-- @include now-ms
-- @include call-many
-- @include join-tenant-list
local lease, weights, backlogSize, batchSize = tonumber(leaseMs), cjson.decode(weightsJson), tonumber(backlog), tonumber(batch)
local tenantCount = tonumber(tenants)
local listOf = {}
for index = 0, tenantCount - 1 do listOf[ARGV[ARGV_REST + index]] = KEYS[KEYS_REST + index] end
local ids, priorities = {}, {}
for index = ARGV_REST + tenantCount, #ARGV, 2 do
  ids[#ids + 1] = ARGV[index]
  priorities[#priorities + 1] = ARGV[index + 1]
end
if #ids > 0 then joinTenantList(ringKey, listOf[joining], arrivalsKey, joining, ids, priorities) end
local out = {}
if admit ~= '1' then return {out, 0} end
local undeclared = {}
local soonest = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
if #soonest > 0 and tonumber(soonest[2]) <= nowMs() then
  for _, member in ipairs(redis.call('ZRANGE', dueKey, '-inf', string.format('%d', nowMs()), 'BYSCORE', 'LIMIT', 0, 500)) do
    -- [pool, task, tenant, priority] (due-tasks.ts)
    local entry = cjson.decode(member)
    local list = listOf[entry[3]]
    if list then
      redis.call('ZREM', dueKey, member)
      joinTenantList(ringKey, list, arrivalsKey, entry[3], {entry[2]}, {entry[4]})
    else
      undeclared[#undeclared + 1] = entry[3]
    end
  end
end
if #undeclared > 0 then return {out, undeclared} end
if redis.call('EXISTS', ringKey) == 0 then return {out, 0} end
local queued = redis.call('LLEN', waitKey) + redis.call('ZCARD', leasesKey)
local want = backlogSize - queued
if want < batchSize and queued >= batchSize then return {out, 0} end
-- Read only when something may be leased: a worker's turn after each of its jobs mostly finds nothing.
local now = nowMs()
local admitted = 0
local leased = {}
-- Every task leased in this turn is leased until the same moment: its score made once, as a whole
-- number (Redis would format a Lua number with '%.17g' for each, about 7K instructions).
local leasedUntil = string.format('%d', now + lease)
local unknown = 0
local hasRuns = redis.call('EXISTS', runsKey) == 1
while admitted < want do
  local head = redis.call('ZRANGE', ringKey, 0, 1, 'WITHSCORES')
  if #head == 0 then break end
  local tenant, vtime = head[1], tonumber(head[2])
  local list = listOf[tenant]
  if not list then
    unknown = 1
    break
  end
  local weight = weights[tenant] or weights['*'] or 1
  local take = want - admitted
  if #head > 2 then take = math.max(1, math.min(take, math.ceil((tonumber(head[4]) - vtime) * weight - 1e-9))) end
  local popped = redis.call('ZPOPMIN', list, take)
  local ids = {}
  for index = 1, #popped, 2 do ids[#ids + 1] = popped[index] end
  -- (the next runs' job ids of tasks that came back from a wait: only read while some did)
  local runs = {}
  if hasRuns then
    -- A thousand at a time, as callMany: a turn may pop more than Lua's unpack takes (about 8,000).
    for from = 1, #ids, 1000 do
      local got = redis.call('HMGET', runsKey, unpack(ids, from, math.min(from + 999, #ids)))
      for index = 1, #got do runs[from + index - 1] = got[index] end
    end
    callMany('HDEL', runsKey, ids)
  end
  for index = 1, #ids do
    admitted = admitted + 1
    leased[#leased + 1] = leasedUntil
    leased[#leased + 1] = ids[index]
    out[#out + 1] = ids[index]
    out[#out + 1] = tenant
    out[#out + 1] = runs[index] or ''
  end
  if #popped < 2 * take or redis.call('EXISTS', list) == 0 then
    redis.call('ZREM', ringKey, tenant)
  else
    redis.call('ZADD', ringKey, vtime + (#popped / 2) / weight, tenant)
  end
end
callMany('ZADD', leasesKey, leased)
return {out, unknown}

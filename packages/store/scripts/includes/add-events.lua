-- @include call-many
-- addEvents(eventsKey, channel, head, root, seq, first, count, publish): appends the events whose bodies
-- are ARGV[first] to ARGV[first + count - 1] with one RPUSH (an element per event) and one PUBLISH (or
-- what `publish` names: SPUBLISH on a Redis Cluster, pub-sub.ts), and answers the new last seq (with no
-- `eventsKey`, only published: their packed string holds them). A body is the writer's JSON text of an
-- event's fields after `id`, `seq` and `rootId` (task-store.ts, eventBody), and `head` and `root` the
-- line's text before its seq and between its seq and its body (run-events.ts, eventLineHead and
-- eventLineRoot), so a line costs one concatenation: Lua's cjson and number formatting, per field, were
-- most of a commit's cost to Redis. Events are numbered here only: the owner's id and the next seq make
-- the event's id, seq rising by one per event of the task, no gaps.
local function addEvents(eventsKey, channel, head, root, seq, first, count, publish)
  if count == 0 then return seq end
  local lines = {}
  for index = 1, count do
    seq = seq + 1
    local number = string.format('%d', seq)
    lines[index] = head .. number .. '","seq":' .. number .. root .. ARGV[first + index - 1]
  end
  if eventsKey then callMany('RPUSH', eventsKey, lines) end
  if channel then redis.call(publish or 'PUBLISH', channel, table.concat(lines, '\n')) end
  return seq
end

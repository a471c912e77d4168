/**
 * Creating a task that carries an idempotency key, as one Lua script: the key is looked up and, when
 * it names no task yet, the task is stored (record, indexes, first event) and the key set, together.
 * A client that retries a POST whose answer it never got (a timeout, a Redis outage) gets the first
 * task back, and nothing is created twice, whatever the timing of the two requests.
 *
 * KEYS: the idempotency key, all tasks, queued tasks, the tenant's tasks, the tenant's queued tasks.
 * ARGV: the task key prefix, the new id, its order, its fields (JSON), its first event (JSON), the key's TTL (ms).
 * Returns `{id, status}`: the new id and `created`, or the id and current status of the task the key named.
 */
export const CREATE_KEYED_SCRIPT = `
local existing = redis.call('GET', KEYS[1])
if existing then
  local status = redis.call('HGET', ARGV[1] .. existing, 'status')
  if status then return {existing, status} end
end
local id, order = ARGV[2], ARGV[3]
local task = ARGV[1] .. id
for name, value in pairs(cjson.decode(ARGV[4])) do redis.call('HSET', task, name, value) end
redis.call('ZADD', KEYS[2], order, id)
redis.call('ZADD', KEYS[3], order, id)
redis.call('ZADD', KEYS[4], order, id)
redis.call('ZADD', KEYS[5], order, id)
redis.call('XADD', task .. ':events', '1-0', 'event', ARGV[5])
redis.call('SET', KEYS[1], id, 'PX', ARGV[6])
return {id, 'created'}
`;

/**
 * A tenant's list of tasks waiting for a pool (fair-admission.ts), as a Lua function shared by the
 * scripts that put tasks in it: `CREATE` (task-store.ts), which lists a new task in the same call that
 * stores it (so no task is stored that nothing will run), and `ADMIT`, for tasks that became ready later.
 */

/** Scores keep priority first (2^40 apart), then arrival: exact as doubles up to 2^40 arrivals. */
export const PRIORITY_STEP = 2 ** 40;

/** The priority (1 to 10) of a listed task's score. */
export function priorityOfScore(score: number): number {
  return 11 - Math.floor(score / PRIORITY_STEP);
}

/**
 * `joinTenantList(ring, list, arrivals, tenant, ids, priorities)`: adds the tasks to the tenant's list
 * (one `ZADD`), scored priority first, then arrival (from the `arrivals` counter), and the tenant to the
 * pool's ring at the ring's least virtual time if it is not there (it gets no credit for having been away).
 * Uses `callMany` (lua-call-many.ts), which the script defines before it.
 */
export const JOIN_TENANT_LIST = `
local function joinTenantList(ring, list, arrivals, tenant, ids, priorities)
  local n = #ids
  if n == 0 then return end
  local first = redis.call('INCRBY', arrivals, n) - n
  local members = {}
  for i = 1, n do
    members[2 * i - 1] = string.format('%.0f', (11 - tonumber(priorities[i])) * ${PRIORITY_STEP} + first + i)
    members[2 * i] = ids[i]
  end
  callMany('ZADD', list, members)
  if not redis.call('ZSCORE', ring, tenant) then
    local least = redis.call('ZRANGE', ring, 0, 0, 'WITHSCORES')
    redis.call('ZADD', ring, least[2] or 0, tenant)
  end
end
`;

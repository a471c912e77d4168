/**
 * A tenant's list of tasks waiting for a pool (fair-admission.ts), scored priority first, then arrival.
 * Its Lua function (scripts/includes/join-tenant-list.lua) is shared by the
 * scripts that put tasks in it: `CREATE` (task-store.ts), which lists a new task in the same call that
 * stores it (so no task is stored that nothing will run), and `ADMIT`, for tasks that became ready later.
 */

/** Scores keep priority first (2^40 apart), then arrival: exact as doubles up to 2^40 arrivals. */
export const PRIORITY_STEP = 2 ** 40;

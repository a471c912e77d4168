/**
 * What a tenant's tasks wrote to Redis, counted per tenant (`tenant:<t>:bytes`) so that AGENTQ_TENANT_MAX_MB
 * can bound it (tenant-room.ts): a count of tasks does not bound their size, and a tenant's prompts,
 * tool outputs and answers could otherwise take the memory every tenant shares.
 *
 * Counted as written, before compaction, by the scripts that write (commit-script.ts). A task's record
 * keeps what it wrote (`bytes`) and how much of it its tenant's count holds (`counted`). CREATE counts a
 * new task's `createdBytes` at once; its commits add to its `bytes`, and the commit that ends it adds
 * the rest to its tenant's count (one command a task, not one a step): a running task's growth is counted
 * when it ends (AGENTQ_TENANT_MAX_UNFINISHED, AGENTQ_MAX_STEPS and AGENTQ_TOOL_OUTPUT_LIMIT bound it
 * meanwhile). Its removal takes its `counted` off in the script that removes it, so that two removals
 * at once take it off once. The limit is checked when tasks are created (tenant-room.ts).
 */

/** A new task's record, first event and index entries, past its prompt and metadata: about this many bytes. */
const RECORD_BYTES = 512;

/** What creating a task writes, counted: its prompt, its metadata (JSON) and RECORD_BYTES. */
export function createdBytes(task: Record<string, string | undefined>): number {
  return Buffer.byteLength(task['prompt'] ?? '') + Buffer.byteLength(task['metadata'] ?? '') + RECORD_BYTES;
}

/**
 * Lua: `releaseBytes(tenantPrefix, taskKey)` takes what a task's tenant's count holds of it off that
 * count (removed at 0); the caller removes the record in the same script.
 */
export const RELEASE_BYTES = `
local function releaseBytes(tenantPrefix, taskKey)
  local h = redis.call('HMGET', taskKey, 'counted', 'tenant')
  if not h[1] then return end
  local counter = tenantPrefix .. (h[2] or 'default') .. ':bytes'
  -- A tenant with nothing stored keeps no key.
  if redis.call('DECRBY', counter, h[1]) <= 0 then redis.call('DEL', counter) end
end
`;

/**
 * What names an agent and a tool may have. The agents themselves are declared in the configuration
 * file (agentq.config.yaml), not here: each is a pool, next to the planner's.
 */

/** The planner's pool: it breaks a task into subtasks for the agents. */
export const PLANNER_POOL = 'planner';

/** An agent's name: a queue's name and part of a tool's, so a short lower-case word. */
export const AGENT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/** The tools agentq brings, by the name an agent's `tools` list uses. */
export const BUILTIN_TOOLS = [
  'bash',
  'python',
  'node',
  'read_file',
  'write_file',
  'edit_file',
  'list_files',
  'http_fetch',
  'web_search',
  'memory_set',
  'memory_get',
  'memory_list',
  'ask_user',
  'delegate',
] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOLS)[number];

/** The deepest a task may be below its root (a configuration's `delegate.maxDepth` is at most this). */
export const MAX_TASK_DEPTH = 10;

/** How deep, how many and how widely `delegate` calls may start tasks, where an agent's file says nothing. */
export const DELEGATE_DEFAULTS = { maxDepth: 3, maxChildren: 20, maxDescendants: 200 } as const;

/**
 * How a `scope: task` MCP server is given its task's folder: this text in its `args` is replaced by it,
 * and its environment has AGENTQ_TASK_DIR (the folder is never where it starts).
 */
export const MCP_TASK_DIR_ARGUMENT = '${AGENTQ_TASK_DIR}';

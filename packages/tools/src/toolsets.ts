/** The built-in tools by the names a configuration file gives them, and the JSON schema a model sees for each. */
import type { BuiltinToolName } from '@agentq/contract';
import { z } from 'zod';
import { askUserTool } from './ask-user-tool.js';
import { bashTool } from './bash-tool.js';
import { httpFetchTool } from './http-fetch-tool.js';
import { nodeTool } from './node-tool.js';
import { editFileTool } from './edit-file-tool.js';
import { listFilesTool } from './list-files-tool.js';
import { memoryGetTool, memoryListTool, memorySetTool } from './memory-tools.js';
import { createWebSearchTool } from './web-search-tool.js';
import { pythonTool } from './python-tool.js';
import { readFileTool } from './read-file-tool.js';
import type { Tool } from './tool.js';
import { writeFileTool } from './write-file-tool.js';

interface BuiltinToolOptions {
  /** A SearxNG instance: without one, `web_search` is left out. Default none. */
  searchUrl?: string;
}

/**
 * Each built-in tool by the name an agent's `tools` list gives it: a name added to BUILTIN_TOOLS (what
 * the configuration file accepts) is a compile error here until it has its tool.
 */
const BUILTIN = {
  bash: () => bashTool,
  python: () => pythonTool,
  node: () => nodeTool,
  read_file: () => readFileTool,
  write_file: () => writeFileTool,
  edit_file: () => editFileTool,
  list_files: () => listFilesTool,
  http_fetch: () => httpFetchTool,
  web_search: ({ searchUrl }) => (searchUrl ? searchToolFor(searchUrl) : undefined),
  memory_set: () => memorySetTool,
  memory_get: () => memoryGetTool,
  memory_list: () => memoryListTool,
  ask_user: () => askUserTool,
  // Made by the worker for each run (it starts tasks in the run's name): apps/worker's delegate-tool.ts.
  delegate: () => undefined,
} satisfies Record<BuiltinToolName, (options: BuiltinToolOptions) => Tool | undefined>;

/** `web_search` for each SearxNG instance, made once. */
const searchTools = new Map<string, Tool>();

function searchToolFor(searchUrl: string): Tool {
  let search = searchTools.get(searchUrl);
  if (!search) searchTools.set(searchUrl, (search = createWebSearchTool({ searchUrl })));
  return search;
}

/** Built-in tools made for each run by the worker, which knows the run's task: `builtinTools` leaves them out. */
export const RUN_MADE_TOOLS: ReadonlySet<BuiltinToolName> = new Set(['delegate']);

/** Whether a name is one of the built-in tools'. */
export function isBuiltinTool(name: string): name is BuiltinToolName {
  return Object.hasOwn(BUILTIN, name);
}

/**
 * The built-in tools of these names, in their order; names that are not built-in tools (an agent's MCP
 * servers) are left to their caller.
 */
export function builtinTools(names: readonly string[], options: BuiltinToolOptions = {}): Tool[] {
  const tools: Tool[] = [];
  for (const name of names) {
    const tool = isBuiltinTool(name) ? BUILTIN[name](options) : undefined;
    if (tool) tools.push(tool);
  }
  return tools;
}

/** The tools that run code as a process: the ones the jail is for. */
const PROCESS_TOOLS: ReadonlySet<string> = new Set([bashTool.name, pythonTool.name, nodeTool.name]);

export function runsProcesses(tools: readonly Tool[]): boolean {
  return tools.some((tool) => PROCESS_TOOLS.has(tool.name));
}

export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Tools are values made once, so is what a model sees of them: built at first use, then kept. */
const schemas = new WeakMap<Tool, ToolSchema>();

export function toolSchema(tool: Tool): ToolSchema {
  let schema = schemas.get(tool);
  if (!schema) {
    const { $schema: _ignored, ...parameters } = (tool.parameters ?? z.toJSONSchema(tool.schema)) as Record<
      string,
      unknown
    >;
    schema = { name: tool.name, description: tool.description, parameters };
    schemas.set(tool, schema);
  }
  return schema;
}

/** Every fence tag the tools claim, mapped to its tool's name. */
export function fenceTags(tools: readonly Tool[]): Map<string, string> {
  const tags = new Map<string, string>();
  for (const tool of tools) for (const tag of tool.fence?.tags ?? []) tags.set(tag, tool.name);
  return tags;
}

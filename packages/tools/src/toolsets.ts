/** The built-in tools by the names a configuration file gives them, and the JSON schema a model sees for each. */
import { z } from 'zod';
import { askUserTool } from './ask-user-tool.js';
import { bashTool } from './bash-tool.js';
import { httpFetchTool } from './http-fetch-tool.js';
import { nodeTool } from './node-tool.js';
import { editFileTool } from './edit-file-tool.js';
import { listFilesTool } from './list-files-tool.js';
import { memoryTools } from './memory-tools.js';
import { createWebSearchTool } from './web-search-tool.js';
import { pythonTool } from './python-tool.js';
import { readFileTool } from './read-file-tool.js';
import type { Tool } from './tool.js';
import { writeFileTool } from './write-file-tool.js';

const BUILTIN: ReadonlyMap<string, Tool> = new Map(
  [
    bashTool,
    pythonTool,
    nodeTool,
    readFileTool,
    writeFileTool,
    editFileTool,
    listFilesTool,
    httpFetchTool,
    ...memoryTools,
    askUserTool,
  ].map((tool) => [tool.name, tool]),
);

/** `web_search` for each SearxNG instance, made once. */
const searchTools = new Map<string, Tool>();

/**
 * The built-in tools of these names, in their order; names that are not built-in tools (an agent's MCP
 * servers) are left to their caller.
 * @param options.searchUrl a SearxNG instance: without one, `web_search` is left out. Default none.
 */
export function builtinTools(names: readonly string[], options: { searchUrl?: string } = {}): Tool[] {
  const tools: Tool[] = [];
  for (const name of names) {
    if (name === 'web_search') {
      if (!options.searchUrl) continue;
      let search = searchTools.get(options.searchUrl);
      if (!search) searchTools.set(options.searchUrl, (search = createWebSearchTool({ searchUrl: options.searchUrl })));
      tools.push(search);
      continue;
    }
    const tool = BUILTIN.get(name);
    if (tool) tools.push(tool);
  }
  return tools;
}

/** Whether a name is one of the built-in tools'. */
export function isBuiltinTool(name: string): boolean {
  return name === 'web_search' || BUILTIN.has(name);
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

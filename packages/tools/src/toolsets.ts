/** Which tools each agent kind gets, and the JSON schema a model sees for each. */
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

const fileTools = [readFileTool, writeFileTool, editFileTool, listFilesTool];

const TOOLSETS: Record<string, readonly Tool[]> = {
  coder: [bashTool, pythonTool, nodeTool, ...fileTools, httpFetchTool, ...memoryTools, askUserTool],
  file: [bashTool, ...fileTools, ...memoryTools, askUserTool],
  casual: [...memoryTools, askUserTool],
  web: [httpFetchTool, ...memoryTools, askUserTool],
  planner: [],
};

/**
 * The tools of an agent kind.
 * @param options.searchUrl a SearxNG instance: the web agent also gets `web_search`. Default none.
 */
export function toolsFor(agent: string, options: { searchUrl?: string } = {}): readonly Tool[] {
  const tools = TOOLSETS[agent] ?? [];
  if (agent === 'web' && options.searchUrl) return [createWebSearchTool({ searchUrl: options.searchUrl }), ...tools];
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
    const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.schema) as Record<string, unknown>;
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

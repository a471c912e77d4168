/** Which tools each agent kind gets, and the JSON schema a model sees for each. */
import { z } from 'zod';
import { bashTool } from './bash-tool.js';
import { editFileTool } from './edit-file-tool.js';
import { listFilesTool } from './list-files-tool.js';
import { pythonTool } from './python-tool.js';
import { readFileTool } from './read-file-tool.js';
import type { Tool } from './tool.js';
import { writeFileTool } from './write-file-tool.js';

const fileTools = [readFileTool, writeFileTool, editFileTool, listFilesTool];

export const TOOLSETS: Record<string, readonly Tool[]> = {
  coder: [bashTool, pythonTool, ...fileTools],
  file: [bashTool, ...fileTools],
  casual: [],
};

export function toolsFor(agent: string): readonly Tool[] {
  return TOOLSETS[agent] ?? [];
}

export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export function toolSchema(tool: Tool): ToolSchema {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.schema) as Record<string, unknown>;
  return { name: tool.name, description: tool.description, parameters };
}

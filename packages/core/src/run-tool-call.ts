/**
 * Runs one tool call the model asked for. Every model mistake (an unknown tool, arguments that are
 * not JSON, arguments that break the schema, a path outside the work directory) comes back as a
 * failed result that says what to fix, so the model can try again; nothing here throws at the loop.
 */
import type { ToolCall } from '@agentq/protocol';
import { ToolError, type Tool, type ToolContext, type ToolResult } from '@agentq/tools';
import type { z } from 'zod';

export async function runToolCall(options: {
  call: ToolCall;
  tools: readonly Tool[];
  context: ToolContext;
}): Promise<ToolResult> {
  const { call, tools, context } = options;
  const tool = tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    const available = tools.map((candidate) => candidate.name).join(', ') || 'none';
    return { ok: false, output: `Unknown tool "${call.name}". Available tools: ${available}. Call one of those.` };
  }
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return {
      ok: false,
      output: `The arguments of ${call.name} are not valid JSON (${(error as Error).message}). Send them again as one JSON object, e.g. ${exampleArguments(tool)}.`,
    };
  }
  const parsed = tool.schema.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      output: `Invalid arguments for ${call.name}: ${describeIssues(parsed.error)}. Fix them and call ${call.name} again.`,
    };
  }
  try {
    return await tool.run(parsed.data, context);
  } catch (error) {
    if (error instanceof ToolError) return { ok: false, output: error.message };
    const code = (error as NodeJS.ErrnoException).code;
    const message = inWorkdirTerms((error as Error).message, context.workdir);
    if (code === 'ENOENT')
      return { ok: false, output: `No such file or folder (${message}). Check the path with list_files.` };
    if (code === 'EISDIR')
      return { ok: false, output: `That path is a folder, not a file. Use list_files to see what it holds.` };
    if (code === 'ENAMETOOLONG')
      return {
        ok: false,
        output: `A name in that path is too long: a file or folder name may be at most 255 bytes (not characters). Use a shorter name.`,
      };
    return { ok: false, output: `${call.name} failed: ${message}` };
  }
}

/** A system error's text with the work directory's host path taken out: the model sees only its own paths. */
function inWorkdirTerms(message: string, workdir: string): string {
  return message.split(`${workdir}/`).join('').split(workdir).join('.');
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : 'arguments'}: ${issue.message}`)
    .join('; ');
}

function exampleArguments(tool: Tool): string {
  const shape = (tool.schema as unknown as { shape?: Record<string, unknown> }).shape ?? {};
  return JSON.stringify(Object.fromEntries(Object.keys(shape).map((key) => [key, '...'])));
}

/**
 * One tool of an MCP server as the agent loop sees it: named `<server>_<tool>` (what a model's tool
 * name may hold, at most 64 characters), with the server's description and input schema as given.
 * Its result is the server's content as text, through the same output cap as every tool; an error the
 * server reports, a timeout, an answer past the bound read of it, or the server's death is told to the
 * model as something it can act on.
 */
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { capOutput } from '../cap-output.js';
import { McpAnswerTooLargeError } from './capped-answers.js';
import type { Tool, ToolResult } from '../tool.js';

/** Characters of a tool's description a model is shown. */
const MAX_DESCRIPTION = 2_000;

type Call = (args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number) => Promise<unknown>;

export function mcpToolName(server: string, tool: string): string {
  return `${server}_${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

export function mcpTool(options: { server: string; tool: McpTool; call: Call; outputLimit: number }): Tool {
  const { server, tool } = options;
  const { $schema: _ignored, ...parameters } = tool.inputSchema as Record<string, unknown>;
  return {
    name: mcpToolName(server, tool.name),
    // A server's words go into every prompt of the agent: bounded.
    description: `${(tool.description ?? tool.title ?? tool.name).slice(0, MAX_DESCRIPTION)} (from the MCP server "${server}")`,
    // The server checks its own arguments; here they only need to be an object.
    schema: z.record(z.string(), z.unknown()),
    parameters,
    async run(args, context): Promise<ToolResult> {
      let result: CallToolResult;
      try {
        result = (await options.call(
          args as Record<string, unknown>,
          context.signal,
          context.timeoutMs,
        )) as CallToolResult;
      } catch (error) {
        const message = (error as Error).message;
        if (context.signal.aborted) return { ok: false, output: 'cancelled' };
        if (error instanceof McpAnswerTooLargeError)
          return {
            ok: false,
            output: `The MCP server "${server}" answered ${tool.name} with more than ${error.maxBytes} bytes, the most read of one answer: the rest was not read. Ask it for less: a narrower query, fewer items, a page or a range.`,
          };
        if (/timed out|timeout/i.test(message))
          return {
            ok: false,
            output: `The MCP tool ${tool.name} of "${server}" did not answer within ${context.timeoutMs} ms. Call it with less work, or do without it.`,
          };
        return {
          ok: false,
          output: `The MCP server "${server}" failed while it ran ${tool.name}: ${message}. It is started again on the next call: call the tool again, or do without it.`,
        };
      }
      return { ok: result.isError !== true, output: capOutput(contentText(result), options.outputLimit) };
    },
  };
}

/** A result's content as the model reads it: text as text, anything else said by what it is. */
function contentText(result: CallToolResult): string {
  const parts = (result.content ?? []).map((item) => {
    switch (item.type) {
      case 'text':
        return item.text;
      case 'resource':
        return 'text' in item.resource ? item.resource.text : `[resource ${item.resource.uri}]`;
      case 'resource_link':
        return `[resource ${item.uri}]`;
      default:
        return `[${item.type} content]`;
    }
  });
  if (!parts.length && result.structuredContent) return JSON.stringify(result.structuredContent);
  return parts.join('\n') || '(no content)';
}

/**
 * Runs the tool calls of one assistant message, in order, committing each result as it lands.
 * Calls that already have a result (a job resumed after a crash) are not run again. Cancellation is
 * checked before and after each tool; the signal also kills a running tool's process tree.
 */
import type { AssistantMessage, ToolCall, ToolMessage } from '@agentq/protocol';
import type { Tool, ToolContext } from '@agentq/tools';
import type { AgentJournal } from './journal.js';
import { runToolCall } from './run-tool-call.js';

export interface ExecuteToolsOptions {
  message: AssistantMessage;
  /** Ids of calls that already have a result in memory. */
  answered: ReadonlySet<string>;
  tools: readonly Tool[];
  journal: AgentJournal;
  context: ToolContext;
  step: number;
}

/** Returns 'cancelled' when the run was cancelled before every call had its result. `step` completes with the last result. */
export async function executeTools(options: ExecuteToolsOptions): Promise<{ status: 'done' | 'cancelled'; results: ToolMessage[] }> {
  const { journal, step, context } = options;
  const pending: ToolCall[] = (options.message.toolCalls ?? []).filter((call) => !options.answered.has(call.id));
  const results: ToolMessage[] = [];
  for (const [index, call] of pending.entries()) {
    if (context.signal.aborted) return { status: 'cancelled', results };
    await journal.commit({ events: [{ type: 'tool.call', step, data: { id: call.id, name: call.name, arguments: call.arguments } }] });
    const started = performance.now();
    const result = await runToolCall({ call, tools: options.tools, context });
    const durationMs = Math.round(performance.now() - started);
    const message: ToolMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: result.output, ...(result.ok ? {} : { _isError: true }) };
    const isLast = index === pending.length - 1;
    // What really ran stays recorded, even when a cancel arrived while it ran. The step completes in
    // the same commit as its last result, so a resumed job never completes a step twice.
    await journal.commit({
      messages: [message],
      events: [
        { type: 'tool.result', step, data: { id: call.id, name: call.name, ok: result.ok, output: result.output, durationMs } },
        ...(isLast ? [{ type: 'step.completed' as const, step, data: { step } }] : []),
      ],
      ...(isLast ? { steps: step } : {}),
    });
    results.push(message);
    if (context.signal.aborted) return { status: 'cancelled', results };
  }
  return { status: 'done', results };
}

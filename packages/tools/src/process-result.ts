/** Turns a finished process into what the model reads: success is the exit status alone. */
import type { ProcessOutcome } from './run-process.js';
import type { ToolResult } from './tool.js';

export function processResult(outcome: ProcessOutcome, timeoutMs: number): ToolResult {
  const output = outcome.output.trimEnd() || '(no output)';
  if (outcome.cancelled) return { ok: false, output: `${output}\n[cancelled: the task was cancelled while this ran]` };
  if (outcome.timedOut) {
    return {
      ok: false,
      output: `${output}\n[timed out after ${timeoutMs} ms and was killed: make it finish faster, or run long work in smaller steps]`,
    };
  }
  if (outcome.exitCode !== 0) return { ok: false, output: `${output}\n[exit status ${outcome.exitCode ?? 'unknown'}]` };
  return { ok: true, output };
}

/** Turns a finished process into what the model reads: success is the exit status alone. */
import type { ProcessOutcome } from './run-process.js';
import type { ToolResult } from './tool.js';

/** What bash and libc print when a fork hits the process limit. */
const FORK_REFUSED = /fork: (retry: )?Resource temporarily unavailable|Cannot fork|can't start new thread/;

export function processResult(outcome: ProcessOutcome, options: { timeoutMs: number; processLimit?: number }): ToolResult {
  const output = outcome.output.trimEnd() || '(no output)';
  // Said whatever the exit status: a program that hit the limit may still have ended well.
  const limited =
    options.processLimit !== undefined && FORK_REFUSED.test(outcome.output)
      ? `\n[the jail's limit of ${options.processLimit} processes was reached: start fewer processes at once]`
      : '';
  if (outcome.cancelled) return { ok: false, output: `${output}\n[cancelled: the task was cancelled while this ran]` };
  if (outcome.timedOut) {
    return {
      ok: false,
      output: `${output}${limited}\n[timed out after ${options.timeoutMs} ms and was killed: make it finish faster, or run long work in smaller steps]`,
    };
  }
  if (outcome.exitCode !== 0) return { ok: false, output: `${output}${limited}\n[exit status ${outcome.exitCode ?? 'unknown'}]` };
  return { ok: true, output: `${output}${limited}` };
}

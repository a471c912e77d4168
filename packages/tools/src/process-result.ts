/** Turns a finished process into what the model reads: success is the exit status alone. */
import { megabytes, overQuota, quotaText, type DiskUsage } from './disk-quota.js';
import type { ProcessOutcome } from './run-process.js';
import type { ToolResult } from './tool.js';

/** What bash and libc print when a fork hits the process limit. */
const FORK_REFUSED = /fork: (retry: )?Resource temporarily unavailable|Cannot fork|can't start new thread/;

/** `shutdown`: the run was stopped by its worker's shutdown (stop-reasons.ts), not cancelled. */
export function processResult(outcome: ProcessOutcome, options: ResultOptions): ToolResult {
  if (!outcome.deleteOnly || !outcome.disk || !options.diskLimit) return runResult(outcome, options);
  // Its own note says where the folder stands.
  const { diskLimit: _said, ...withoutQuota } = options;
  const result = runResult(outcome, withoutQuota);
  const now = overQuota(outcome.disk.usage, options.diskLimit)
    ? `It still is (${quotaText(outcome.disk.usage, options.diskLimit)}): delete more (rm) before anything else.`
    : 'It is under it now: the next call may write again.';
  return {
    ok: result.ok,
    output: `${result.output}\n[the work directory was past its quota when this started, so this run could only delete: no file could be made or grow ("Disk quota exceeded", "File too large"; a redirection with > counts as making one, even to /dev/null). ${now}]`,
  };
}

interface ResultOptions {
  timeoutMs: number;
  processLimit?: number;
  diskLimit?: DiskUsage;
  shutdown?: boolean;
}

function runResult(outcome: ProcessOutcome, options: ResultOptions): ToolResult {
  const output = outcome.output.trimEnd() || '(no output)';
  // Said whatever the exit status: a program that hit the limit may still have ended well.
  const limited =
    options.processLimit !== undefined && FORK_REFUSED.test(outcome.output)
      ? `\n[the jail's limit of ${options.processLimit} processes was reached: start fewer processes at once]`
      : '';
  if (outcome.disk?.stopped && options.diskLimit) {
    return {
      ok: false,
      output: `${output}\n[stopped: ${quotaText(outcome.disk.stoppedAt ?? outcome.disk.usage, options.diskLimit)}. Delete what you no longer need (rm), then go on in smaller steps]`,
    };
  }
  // Past it after a run too quick to be stopped: said, so that the next write is not a surprise.
  const full =
    outcome.disk && options.diskLimit && overQuota(outcome.disk.usage, options.diskLimit)
      ? `\n[${quotaText(outcome.disk.usage, options.diskLimit)}: delete files (rm) before writing more, or the next tool that writes is stopped]`
      : '';
  const memory = outcome.memory;
  if (memory?.exhausted && !outcome.cancelled) {
    return {
      ok: false,
      output: `${output}\n[killed: the tool's processes used all of their ${megabytes(memory.limitBytes)} of memory together (files in /tmp and /dev/shm count too): use less at once, e.g. read the data in parts, or delete files in /tmp]`,
    };
  }
  if (outcome.cancelled && options.shutdown) {
    return {
      ok: false,
      output: `${output}\n[stopped: the worker running this task stopped (a deploy or a scale-down) while this ran, and the task went on on another worker: run it again if you still need its result]`,
    };
  }
  if (outcome.cancelled) return { ok: false, output: `${output}\n[cancelled: the task was cancelled while this ran]` };
  if (outcome.timedOut) {
    return {
      ok: false,
      output: `${output}${limited}\n[timed out after ${options.timeoutMs} ms and was killed: make it finish faster, or run long work in smaller steps]`,
    };
  }
  if (outcome.exitCode !== 0)
    return { ok: false, output: `${output}${limited}${full}\n[exit status ${outcome.exitCode ?? 'unknown'}]` };
  return { ok: true, output: `${output}${limited}${full}` };
}

/** Runs a program through an interpreter in the work directory: guard, run, and report by exit status. */
import { refuseInteractive, type GuardedLanguage } from './interactive-guard.js';
import { resolveInterpreters } from './interpreters.js';
import type { JailProgram } from './jail.js';
import { processResult } from './process-result.js';
import { runProcess, type ProcessOutcome } from './run-process.js';
import { stoppedByShutdown } from './stop-reasons.js';
import type { ToolContext, ToolResult } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

export async function runCode(options: {
  language: GuardedLanguage;
  code: string;
  program: JailProgram;
  /** bash runs `code` as its command; python and node read it from stdin (so no file lands in the work directory). */
  context: ToolContext;
}): Promise<ToolResult> {
  const { context } = options;
  const refusal = refuseInteractive({ language: options.language, code: options.code });
  if (refusal) return { ok: false, output: refusal };
  const { isolation } = context;
  if (isolation.kind === 'unavailable') {
    return {
      ok: false,
      output: `${options.program} is disabled on this worker: it runs code only inside a jail, and the jail cannot run here (${isolation.reason}). Do without ${options.program} for this task, and tell the user that the operator must fix the worker.`,
    };
  }
  const bash = options.program === 'bash';
  const bounds = {
    ...(bash ? {} : { input: options.code }),
    timeoutMs: context.timeoutMs,
    outputLimit: context.outputLimit,
    ...(context.disk ? { disk: context.disk.quota() } : {}),
  };
  let outcome: ProcessOutcome;
  if (isolation.kind === 'jail') {
    outcome = await isolation.jail.run({
      program: options.program,
      ...(bash ? { command: options.code } : { args: ['-'] }),
      workdir: context.workdir,
      ...bounds,
      signal: context.signal,
    });
  } else {
    const unjailed = {
      file: resolveInterpreters()[options.program],
      args: bash ? ['-c', options.code] : ['-'],
      cwd: context.workdir,
      env: toolEnvironment({ workdir: context.workdir }),
      ...bounds,
    };
    outcome = isolation.launcher
      ? await isolation.launcher.run({ unjailed }, context.signal)
      : await runProcess({ ...unjailed, signal: context.signal });
  }
  context.disk?.record(outcome.disk);
  return processResult(outcome, {
    timeoutMs: context.timeoutMs,
    shutdown: stoppedByShutdown(context.signal),
    ...(isolation.kind === 'jail' ? { processLimit: isolation.jail.limits.processes } : {}),
    ...(context.disk ? { diskLimit: context.disk.limit } : {}),
  });
}

/** Runs a program through an interpreter in the work directory: guard, run, and report by exit status. */
import { refuseInteractive, type GuardedLanguage } from './interactive-guard.js';
import { resolveInterpreters } from './interpreters.js';
import { sandboxed } from './process-sandbox.js';
import { processResult } from './process-result.js';
import { runProcess } from './run-process.js';
import type { ToolContext, ToolResult } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

export async function runCode(options: {
  language: GuardedLanguage;
  code: string;
  file: string;
  args: readonly string[];
  /** The program on stdin (so no file lands in the work directory). */
  input?: string;
  context: ToolContext;
}): Promise<ToolResult> {
  const { context } = options;
  const refusal = refuseInteractive({ language: options.language, code: options.code });
  if (refusal) return { ok: false, output: refusal };
  const command =
    context.sandbox === 'bwrap'
      ? sandboxed({ file: options.file, args: options.args, workdir: context.workdir, interpreters: Object.values(resolveInterpreters()) })
      : { file: options.file, args: options.args };
  const outcome = await runProcess({
    file: command.file,
    args: command.args,
    ...(options.input !== undefined ? { input: options.input } : {}),
    cwd: context.workdir,
    env: toolEnvironment({ workdir: context.workdir }),
    timeoutMs: context.timeoutMs,
    outputLimit: context.outputLimit,
    signal: context.signal,
  });
  return processResult(outcome, context.timeoutMs);
}

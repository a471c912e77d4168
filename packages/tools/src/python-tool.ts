import { z } from 'zod';
import { resolveInterpreters } from './interpreters.js';
import { processResult } from './process-result.js';
import { runProcess } from './run-process.js';
import { defineTool } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

export const pythonTool = defineTool({
  name: 'python',
  description:
    "Run a Python 3 program in the task's work directory and get what it prints. Put values in variables and print results to stdout: nothing can be typed in.",
  schema: z.object({ code: z.string().min(1).describe('The whole program') }),
  async run(args, context) {
    const outcome = await runProcess({
      file: resolveInterpreters().python,
      // The program comes on stdin, so no temporary file lands in the work directory.
      args: ['-'],
      input: args.code,
      cwd: context.workdir,
      env: toolEnvironment({ workdir: context.workdir }),
      timeoutMs: context.timeoutMs,
      outputLimit: context.outputLimit,
      signal: context.signal,
    });
    return processResult(outcome, context.timeoutMs);
  },
});

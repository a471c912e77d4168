import { z } from 'zod';
import { resolveInterpreters } from './interpreters.js';
import { processResult } from './process-result.js';
import { runProcess } from './run-process.js';
import { defineTool } from './tool.js';
import { toolEnvironment } from './tool-environment.js';

export const bashTool = defineTool({
  name: 'bash',
  description:
    'Run a bash command in the task\'s work directory and get its output (stdout and stderr). Non-interactive: nothing can be typed in.',
  schema: z.object({ command: z.string().min(1).describe('The command, e.g. "ls -la" or "python3 main.py"') }),
  async run(args, context) {
    const outcome = await runProcess({
      file: resolveInterpreters().bash,
      args: ['-c', args.command],
      cwd: context.workdir,
      env: toolEnvironment({ workdir: context.workdir }),
      timeoutMs: context.timeoutMs,
      outputLimit: context.outputLimit,
      signal: context.signal,
    });
    return processResult(outcome, context.timeoutMs);
  },
});

import { z } from 'zod';
import { runCode } from './run-code.js';
import { defineTool } from './tool.js';

export const bashTool = defineTool({
  name: 'bash',
  description:
    "Run a bash command in the task's work directory and get its output (stdout and stderr). Non-interactive: nothing can be typed in.",
  schema: z.object({ command: z.string().min(1).describe('The command, e.g. "ls -la" or "python3 main.py"') }),
  fence: { tags: ['bash', 'sh', 'shell'], toArguments: (block) => ({ command: block.code }) },
  run: (args, context) => runCode({ language: 'bash', code: args.command, program: 'bash', context }),
});


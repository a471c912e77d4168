import { z } from 'zod';
import { runCode } from './run-code.js';
import { defineTool } from './tool.js';

export const pythonTool = defineTool({
  name: 'python',
  description:
    "Run a Python 3 program in the task's work directory and get what it prints. Put values in variables and print results to stdout: nothing can be typed in.",
  schema: z.object({ code: z.string().min(1).describe('The whole program') }),
  fence: { tags: ['python', 'py', 'python3'], toArguments: (block) => ({ code: block.code }) },
  run: (args, context) => runCode({ language: 'python', code: args.code, program: 'python', context }),
});

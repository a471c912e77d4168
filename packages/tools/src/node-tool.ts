import { z } from 'zod';
import { runCode } from './run-code.js';
import { defineTool } from './tool.js';

export const nodeTool = defineTool({
  name: 'node',
  description:
    "Run a JavaScript program with Node.js in the task's work directory and get what it prints (console.log). Nothing can be typed in.",
  schema: z.object({ code: z.string().min(1).describe('The whole program (CommonJS; use import() for ES modules)') }),
  fence: { tags: ['node', 'javascript', 'js'], toArguments: (block) => ({ code: block.code }) },
  run: (args, context) => runCode({ language: 'node', code: args.code, program: 'node', context }),
});

import { z } from 'zod';
import { runCode } from './run-code.js';
import { defineTool } from './tool.js';

/**
 * bash gets its command as one argument (`-c <command>`), and Linux caps one argument at 128 KiB
 * (MAX_ARG_STRLEN): a longer one cannot start (E2BIG). 4 KiB stay free for the jail's prelude.
 */
export const MAX_COMMAND_BYTES = 128 * 1024 - 4 * 1024;

export const bashTool = defineTool({
  name: 'bash',
  description:
    "Run a bash command in the task's work directory and get its output (stdout and stderr). Non-interactive: nothing can be typed in.",
  schema: z.object({ command: z.string().min(1).describe('The command, e.g. "ls -la" or "python3 main.py"') }),
  fence: { tags: ['bash', 'sh', 'shell'], toArguments: (block) => ({ command: block.code }) },
  run: async (args, context) => {
    const bytes = Buffer.byteLength(args.command);
    if (bytes > MAX_COMMAND_BYTES) {
      return {
        ok: false,
        output: `The command is ${bytes} bytes, more than one command line holds (${MAX_COMMAND_BYTES} bytes), so it did not run. Write the script to a file with write_file and run it with \`bash script.sh\`.`,
      };
    }
    return runCode({ language: 'bash', code: args.command, program: 'bash', context });
  },
});

import { z } from 'zod';
import { capOutput } from './cap-output.js';
import { defineTool } from './tool.js';
import { readWorkdirFile } from './workdir-files.js';

/** Larger files are read with bash, in parts: the whole file would sit in the worker's memory. */
const MAX_READ_BYTES = 16 * 1024 * 1024;

export const readFileTool = defineTool({
  name: 'read_file',
  description: 'Read a text file of the work directory, with line numbers. Use offset and limit to page through long files.',
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    offset: z.number().int().min(1).optional().describe('First line to show (1-based). Default 1'),
    limit: z.number().int().min(1).optional().describe('How many lines to show. Default 2000'),
  }),
  async run(args, context) {
    const lines = (await readWorkdirFile({ workdir: context.workdir, path: args.path, maxBytes: MAX_READ_BYTES })).split('\n');
    const first = args.offset ?? 1;
    const shown = lines.slice(first - 1, first - 1 + (args.limit ?? 2000));
    if (shown.length === 0) return { ok: true, output: `(${args.path} has ${lines.length} lines; nothing at line ${first})` };
    const numbered = shown.map((line, index) => `${String(first + index).padStart(6)}\t${line}`).join('\n');
    const rest = lines.length - (first - 1 + shown.length);
    return { ok: true, output: capOutput(numbered, context.outputLimit) + (rest > 0 ? `\n(${rest} more lines)` : '') };
  },
});

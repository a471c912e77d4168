import { setImmediate as nextTurn } from 'node:timers/promises';
import { z } from 'zod';
import { capOutput } from './cap-output.js';
import { defineTool } from './tool.js';
import { readWorkdirFile } from './workdir-files.js';

/** Larger files are read with bash, in parts: the whole file would sit in the worker's memory. */
const MAX_READ_BYTES = 16 * 1024 * 1024;
/** Lines walked between two turns of the event loop: about 4 ms of the worst file's. */
const LINES_PER_TURN = 262_144;

export const readFileTool = defineTool({
  name: 'read_file',
  description:
    'Read a text file of the work directory, with line numbers. Use offset and limit to page through long files.',
  pathArguments: ['path'],
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    offset: z.number().int().min(1).optional().describe('First line to show (1-based). Default 1'),
    limit: z.number().int().min(1).optional().describe('How many lines to show. Default 2000'),
  }),
  async run(args, context) {
    const text = await readWorkdirFile({ workdir: context.workdir, path: args.path, maxBytes: MAX_READ_BYTES });
    const first = args.offset ?? 1;
    const wanted = first - 1 + (args.limit ?? 2000);
    // The lines are walked, not split: a file of millions of short lines becomes no array of them.
    // They are shown until the output limit (the first one cut to it), then counted only, a few
    // milliseconds at a time (16 MiB of empty lines take ~250 ms to walk: the worker's other loops go on).
    const shown: string[] = [];
    let size = 0;
    let last = first - 1;
    let full = false;
    let line = 1;
    for (let start = 0; ; line++) {
      const end = text.indexOf('\n', start);
      if (line >= first && line <= wanted && !full) {
        const numbered = `${String(line).padStart(6)}\t${text.slice(start, end === -1 ? undefined : end)}`;
        full = shown.length > 0 && size + numbered.length + 1 > context.outputLimit;
        if (!full) {
          shown.push(shown.length ? numbered : capOutput(numbered, context.outputLimit));
          size += numbered.length + 1;
          last = line;
        }
      }
      if (end === -1) break;
      start = end + 1;
      if (line % LINES_PER_TURN === 0) await nextTurn();
    }
    if (shown.length === 0) return { ok: true, output: `(${args.path} has ${line} lines; nothing at line ${first})` };
    const rest = line - last;
    const more =
      rest > 0
        ? `\n(${rest} more lines${full ? `: the output limit is reached; read on with offset ${last + 1}` : ''})`
        : '';
    return { ok: true, output: shown.join('\n') + more };
  },
});

import { closeSync, fstatSync } from 'node:fs';
import { z } from 'zod';
import type { WorkdirDisk } from './disk-quota.js';
import { defineTool, type ToolResult } from './tool.js';
import { openInWorkdir, readContent, replaceContent } from './workdir-files.js';

const MAX_EDIT_BYTES = 16 * 1024 * 1024;

export const editFileTool = defineTool({
  name: 'edit_file',
  description:
    'Replace text in a file of the work directory. old_text must match exactly once (copy it from read_file, without line numbers), unless replace_all is true.',
  pathArguments: ['path'],
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    old_text: z.string().min(1).describe('The exact text to replace'),
    new_text: z.string().describe('The replacement'),
    replace_all: z.boolean().optional().describe('Replace every match. Default false'),
  }),
  async run(args, context) {
    const file = await openInWorkdir({ workdir: context.workdir, path: args.path, access: 'update' });
    try {
      return await edit(file, args, context.disk);
    } finally {
      closeSync(file);
    }
  },
});

/** At most this many replacements at once: more is a change for sed or a script, not a tool call that holds the worker's thread. */
const MAX_REPLACEMENTS = 100_000;

async function edit(
  file: number,
  args: { path: string; old_text: string; new_text: string; replace_all?: boolean | undefined },
  disk: WorkdirDisk | undefined,
): Promise<ToolResult> {
  const size = fstatSync(file).size;
  if (size > MAX_EDIT_BYTES)
    return {
      ok: false,
      output: `${args.path} is larger than ${MAX_EDIT_BYTES} bytes: edit it with bash (sed, python).`,
    };
  const text = (await readContent(file, MAX_EDIT_BYTES)).toString('utf8');
  const matches = countMatches(text, args.old_text, MAX_REPLACEMENTS + 1);
  if (matches === 0) {
    return {
      ok: false,
      output: `old_text was not found in ${args.path}. Read the file again and copy the exact text, including spaces.`,
    };
  }
  const howMany = matches > MAX_REPLACEMENTS ? `more than ${MAX_REPLACEMENTS}` : String(matches);
  if (matches > 1 && !args.replace_all) {
    return {
      ok: false,
      output: `old_text matches ${howMany} places in ${args.path}. Include more surrounding lines so it matches once, or set replace_all to true.`,
    };
  }
  if (matches > MAX_REPLACEMENTS) {
    return {
      ok: false,
      output: `old_text matches ${howMany} places in ${args.path}; replace_all changes at most ${MAX_REPLACEMENTS}. Match fewer (a longer old_text), or make a change this wide with bash (sed, python).`,
    };
  }
  // Known before it is built: a short old_text and a long new_text could make a string of gigabytes.
  const after = size + matches * (Buffer.byteLength(args.new_text) - Buffer.byteLength(args.old_text));
  if (after > MAX_EDIT_BYTES) {
    return {
      ok: false,
      output: `The edit would make ${args.path} ${after} bytes, more than ${MAX_EDIT_BYTES}: write a file that large with bash (python), in parts.`,
    };
  }
  const refused = after > size ? await disk?.admit(after - size) : undefined;
  if (refused) return { ok: false, output: refused };
  await replaceContent(
    file,
    args.replace_all
      ? text.replaceAll(args.old_text, () => args.new_text)
      : text.replace(args.old_text, () => args.new_text),
  );
  return { ok: true, output: `Replaced ${args.replace_all ? matches : 1} occurrence(s) in ${args.path}` };
}

/** Non-overlapping matches of `needle`, counted up to `stopAt` (without the array a split would make of a file of one-character matches). */
function countMatches(text: string, needle: string, stopAt: number): number {
  let count = 0;
  for (
    let index = text.indexOf(needle);
    index !== -1 && count < stopAt;
    index = text.indexOf(needle, index + needle.length)
  )
    count++;
  return count;
}

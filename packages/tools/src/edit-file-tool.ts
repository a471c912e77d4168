import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, type ToolResult } from './tool.js';
import { openInWorkdir, replaceContent } from './workdir-files.js';

const MAX_EDIT_BYTES = 16 * 1024 * 1024;

export const editFileTool = defineTool({
  name: 'edit_file',
  description:
    'Replace text in a file of the work directory. old_text must match exactly once (copy it from read_file, without line numbers), unless replace_all is true.',
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    old_text: z.string().min(1).describe('The exact text to replace'),
    new_text: z.string().describe('The replacement'),
    replace_all: z.boolean().optional().describe('Replace every match. Default false'),
  }),
  async run(args, context) {
    const file = await openInWorkdir({ workdir: context.workdir, path: args.path, access: 'update' });
    try {
      return await edit(file, args);
    } finally {
      await file.close();
    }
  },
});

async function edit(file: FileHandle, args: { path: string; old_text: string; new_text: string; replace_all?: boolean | undefined }): Promise<ToolResult> {
  if ((await file.stat()).size > MAX_EDIT_BYTES) return { ok: false, output: `${args.path} is larger than ${MAX_EDIT_BYTES} bytes: edit it with bash (sed, python).` };
  const text = await file.readFile('utf8');
  const matches = text.split(args.old_text).length - 1;
  if (matches === 0) {
    return { ok: false, output: `old_text was not found in ${args.path}. Read the file again and copy the exact text, including spaces.` };
  }
  if (matches > 1 && !args.replace_all) {
    return {
      ok: false,
      output: `old_text matches ${matches} places in ${args.path}. Include more surrounding lines so it matches once, or set replace_all to true.`,
    };
  }
  await replaceContent(file, args.replace_all ? text.replaceAll(args.old_text, () => args.new_text) : text.replace(args.old_text, () => args.new_text));
  return { ok: true, output: `Replaced ${args.replace_all ? matches : 1} occurrence(s) in ${args.path}` };
}

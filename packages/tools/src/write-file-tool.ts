import { z } from 'zod';
import { defineTool, fileOwner } from './tool.js';
import { writeWorkdirFile } from './workdir-files.js';

export const writeFileTool = defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file in the work directory (folders are created as needed).',
  pathArguments: ['path'],
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    content: z.string().describe('The whole new content'),
  }),
  fence: {
    tags: ['file'],
    toArguments: (block) =>
      block.savePath
        ? { path: block.savePath, content: block.code.endsWith('\n') ? block.code : `${block.code}\n` }
        : 'A ```file block needs a path on its fence line, e.g. ```file:notes/todo.md',
  },
  async run(args, context) {
    const refused = await context.disk?.admit(Buffer.byteLength(args.content));
    if (refused) return { ok: false, output: refused };
    const owner = fileOwner(context);
    await writeWorkdirFile({
      workdir: context.workdir,
      path: args.path,
      content: args.content,
      ...(owner ? { owner } : {}),
    });
    return { ok: true, output: `Wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}` };
  },
});

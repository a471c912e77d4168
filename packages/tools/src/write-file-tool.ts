import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { resolveInWorkdir } from './sandbox-path.js';
import { defineTool } from './tool.js';

export const writeFileTool = defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file in the work directory (folders are created as needed).',
  schema: z.object({
    path: z.string().min(1).describe('Relative to the work directory'),
    content: z.string().describe('The whole new content'),
  }),
  fence: {
    tags: ['file'],
    toArguments: (block) =>
      block.savePath ? { path: block.savePath, content: block.code.endsWith('\n') ? block.code : `${block.code}\n` } : 'A ```file block needs a path on its fence line, e.g. ```file:notes/todo.md',
  },
  async run(args, context) {
    const file = await resolveInWorkdir({ workdir: context.workdir, path: args.path });
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, args.content);
    return { ok: true, output: `Wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}` };
  },
});

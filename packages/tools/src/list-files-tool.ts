import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { defineTool } from './tool.js';
import { resolveInWorkdir } from './workdir-files.js';

const MAX_ENTRIES = 500;
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules', '__pycache__']);

export const listFilesTool = defineTool({
  name: 'list_files',
  description: `List files of the work directory (recursively), optionally filtered by a glob such as "**/*.py". At most ${MAX_ENTRIES} entries.`,
  schema: z.object({
    path: z.string().optional().describe('A folder relative to the work directory. Default "."'),
    glob: z.string().optional().describe('e.g. "*.txt" or "src/**/*.ts". Default: everything'),
  }),
  async run(args, context) {
    const folder = await resolveInWorkdir({ workdir: context.workdir, path: args.path ?? '.' });
    if (!(await lstat(folder)).isDirectory()) return { ok: false, output: `${args.path} is a file, not a folder: read it with read_file.` };
    const matches = args.glob ? picomatch(args.glob, { dot: true }) : () => true;
    const found: string[] = [];
    let truncated = false;
    const walk = async (directory: string): Promise<void> => {
      const entries = await readdir(directory, { withFileTypes: true });
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        if (found.length >= MAX_ENTRIES) {
          truncated = true;
          return;
        }
        const full = path.join(directory, entry.name);
        const relative = path.relative(folder, full);
        // Links are listed, never followed: they may point out of the work directory.
        if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) {
          if (!args.glob) found.push(`${relative}/`);
          await walk(full);
        } else if (!entry.isDirectory() && matches(relative)) {
          found.push(relative);
        }
      }
    };
    await walk(folder);
    if (found.length === 0) return { ok: true, output: args.glob ? `No files match ${args.glob}.` : '(empty)' };
    return { ok: true, output: found.join('\n') + (truncated ? `\n(stopped at ${MAX_ENTRIES} entries: narrow the path or glob)` : '') };
  },
});

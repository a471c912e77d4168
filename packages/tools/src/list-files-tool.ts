import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { braceExpand, Minimatch } from 'minimatch';
import { z } from 'zod';
import { defineTool } from './tool.js';
import { resolveInWorkdir } from './workdir-files.js';

const MAX_ENTRIES = 500;
/**
 * A glob's alternatives at most (`{a,b}{c,d}` is 4): each is matched against every path. Glob matching
 * itself is minimatch's, which takes time linear in a path whatever the pattern: a backtracking matcher
 * (a glob made a regular expression) took seconds for `*a*a*a*a*a*a*b` against a name of 60 `a`s, in
 * the worker's own thread, where every task it runs waits.
 */
const MAX_ALTERNATIVES = 1_000;
const GLOB_OPTIONS = { dot: true, braceExpandMax: MAX_ALTERNATIVES };
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules', '__pycache__']);

export const listFilesTool = defineTool({
  name: 'list_files',
  description: `List files of the work directory (recursively), optionally filtered by a glob such as "**/*.py". At most ${MAX_ENTRIES} entries.`,
  pathArguments: ['path'],
  schema: z.object({
    path: z.string().optional().describe('A folder relative to the work directory. Default "."'),
    glob: z.string().max(1_000).optional().describe('e.g. "*.txt" or "src/**/*.ts". Default: everything'),
  }),
  async run(args, context) {
    const folder = await resolveInWorkdir({ workdir: context.workdir, path: args.path ?? '.' });
    if (!(await lstat(folder)).isDirectory())
      return { ok: false, output: `${args.path} is a file, not a folder: read it with read_file.` };
    const glob = args.glob;
    if (glob !== undefined && braceExpand(glob, { braceExpandMax: MAX_ALTERNATIVES + 1 }).length > MAX_ALTERNATIVES) {
      return {
        ok: false,
        output: `The glob ${glob.slice(0, 100)} has more than ${MAX_ALTERNATIVES} alternatives in braces: use fewer {a,b} groups.`,
      };
    }
    const matcher = glob !== undefined ? new Minimatch(glob, GLOB_OPTIONS) : undefined;
    const matches = (relative: string) => matcher?.match(relative) ?? true;
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
          if (glob === undefined) found.push(`${relative}/`);
          await walk(full);
        } else if (!entry.isDirectory() && matches(relative)) {
          found.push(relative);
        }
      }
    };
    await walk(folder);
    if (found.length === 0) return { ok: true, output: glob !== undefined ? `No files match ${glob}.` : '(empty)' };
    return {
      ok: true,
      output: found.join('\n') + (truncated ? `\n(stopped at ${MAX_ENTRIES} entries: narrow the path or glob)` : ''),
    };
  },
});

/**
 * Resolves a path the model gave inside the task's work directory, or refuses it (learn-claude-code's
 * safe_path, plus symlinks): `..` that climbs out, absolute paths elsewhere, and links that point out.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './errors.js';

/**
 * @example await resolveInWorkdir({ workdir: '/data/work/t1', path: 'src/a.py' }) // '/data/work/t1/src/a.py'
 */
export async function resolveInWorkdir(options: { workdir: string; path: string }): Promise<string> {
  const root = await realpath(options.workdir);
  const candidate = path.resolve(root, options.path);
  if (!isInside(root, candidate)) throw outside(options.path);
  // Follow links of the deepest part that exists: a link inside may point outside.
  const existing = await deepestExisting(candidate);
  const real = await realpath(existing);
  if (!isInside(root, real)) throw outside(options.path);
  return candidate;
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

async function deepestExisting(candidate: string): Promise<string> {
  let current = candidate;
  for (;;) {
    try {
      await realpath(current);
      return current;
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return current;
      current = parent;
    }
  }
}

function outside(requested: string): ToolError {
  return new ToolError(
    'path_outside_workdir',
    `Refused: "${requested}" is outside the task's work directory. Use a relative path such as "notes/result.txt"; files may only be read and written inside the work directory.`,
  );
}

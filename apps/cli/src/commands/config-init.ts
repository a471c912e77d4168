/**
 * `agentq config init [DIR]`: a configuration folder to start from, in DIR (default: the working
 * directory): the file agentq ships (agentq.config.yaml), the instruction files its agents name
 * (prompts/), the JSON Schema the file names for editors, and a .env.example. The file's relative paths
 * are from its own folder, so `agentq config check` passes on it from any working directory.
 *
 * A file already there is never overwritten: when any is, nothing is written and each is named. Nor is
 * anything written through a link in DIR (a link planted there would send a file elsewhere): a link
 * where a file or folder would go counts as taken, and each file is created exclusively.
 */
import { constants } from 'node:fs';
import { copyFile, lstat, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CONFIG_FILE, loadConfigFile } from '@agentq/config';

/** Where the shipped files are: the project's root. */
const SHIPPED = path.dirname(DEFAULT_CONFIG_FILE);

export async function configInitCommand(dir: string | undefined): Promise<number> {
  const folder = path.resolve(dir ?? '.');
  // Any folder that cannot be read is left to mkdir below, which says why.
  if ((await stat(folder).catch(() => undefined))?.isDirectory() === false) {
    process.stderr.write(`agentq config init: ${folder} is a file, not a folder: name a folder (new or not)\n`);
    return 1;
  }
  const files = starterFiles();
  const taken = (await Promise.all(files.map((file) => inTheWay(folder, file)))).filter(
    (problem): problem is string => problem !== undefined,
  );
  if (taken.length) {
    process.stderr.write(
      `agentq config init: nothing was written; ${folder} already holds:\n${[...new Set(taken)].map((problem) => `  ${problem}\n`).join('')}Move them away (or init another folder: agentq config init DIR).\n`,
    );
    return 1;
  }
  for (const file of files) {
    const to = path.join(folder, file);
    await mkdir(path.dirname(to), { recursive: true });
    await copyFile(path.join(SHIPPED, file), to, constants.COPYFILE_EXCL);
    process.stdout.write(`wrote ${to}\n`);
  }
  const relative = path.relative(process.cwd(), folder);
  const here = relative.startsWith('..') ? folder : relative;
  const configFile = path.join(here, 'agentq.config.yaml');
  process.stdout.write(
    `Next: edit ${configFile} (agents, MCP servers, tenants, models: docs/configuration.md); cp ${path.join(here, '.env.example')} ${path.join(here, '.env')} and set the model endpoint; then agentq config check ${configFile}\n`,
  );
  return 0;
}

/** What init writes, relative to DIR: the shipped file, its agents' instruction files, its schema, .env.example. */
function starterFiles(): string[] {
  const shipped = loadConfigFile(DEFAULT_CONFIG_FILE);
  const instructions = Object.values(shipped.settings.agents).flatMap((agent) =>
    typeof agent.instructions === 'object' ? [path.normalize(agent.instructions.file)] : [],
  );
  return [path.basename(DEFAULT_CONFIG_FILE), 'agentq.config.schema.json', '.env.example', ...new Set(instructions)];
}

/** Why `file` cannot be written in `folder`: it, or a link on its way, is there; undefined when it can be. */
async function inTheWay(folder: string, file: string): Promise<string | undefined> {
  const parts = file.split(path.sep);
  for (let depth = 1; depth <= parts.length; depth++) {
    const place = path.join(folder, ...parts.slice(0, depth));
    const stats = await lstat(place).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (!stats) return undefined;
    if (stats.isSymbolicLink()) return `${place} (a link)`;
    if (depth === parts.length) return place;
    if (!stats.isDirectory()) return `${place} (not a folder)`;
  }
  return undefined;
}

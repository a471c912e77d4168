/**
 * Where a stdio MCP server's own folder (`mcpServers.<name>.dir`) may be. Its jail shows it that folder,
 * so the folder may not hold what the install keeps from every server: the configuration's folder (the
 * file, and the .env beside it: every tenant's keys), the .env the processes read, the data folder
 * (every task's folder); nor may it be inside the data folder. Paths are compared resolved, every link
 * followed, so no spelling (`..`, `./a/../..`, a link to `.`) gets round the rule.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** What no MCP server, and no mount of a jail, may hold. */
export interface PrivatePlaces {
  /** The configuration file's folder. */
  configDir: string;
  /** The .env file the processes read (whether it exists or not); none when they read none. */
  envFile?: string | undefined;
  /** AGENTQ_DATA_DIR. */
  dataDir: string;
}

/** A path with every link in it followed, as far as it exists; the rest as written. */
export function resolvedPath(target: string): string {
  let existing = path.resolve(target);
  const rest: string[] = [];
  while (!existsSync(existing) && path.dirname(existing) !== existing) {
    rest.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  return path.join(realpathSync(existing), ...rest);
}

/** Whether `folder` is `place` or holds it. */
export function holds(folder: string, place: string): boolean {
  return place === folder || place.startsWith(folder.endsWith(path.sep) ? folder : folder + path.sep);
}

/** The places, resolved: the configuration's folder, the .env, the data folder. */
export function privatePaths(places: PrivatePlaces): string[] {
  return [places.configDir, ...(places.envFile ? [places.envFile] : []), places.dataDir].map(resolvedPath);
}

/**
 * Why `dir` may not be server `name`'s folder (with the fix), or undefined when it may. `dir` is absolute.
 */
export function serverDirProblem(name: string, dir: string, places: PrivatePlaces): string | undefined {
  const folder = resolvedPath(dir);
  const configDir = resolvedPath(places.configDir);
  const dataDir = resolvedPath(places.dataDir);
  const envFile = places.envFile ? resolvedPath(places.envFile) : undefined;
  const spelt = folder === path.resolve(dir) ? folder : `${dir} (${folder})`;
  const problem = holds(folder, configDir)
    ? `${spelt} holds the configuration's folder ${configDir} (the file, and the .env of the install's secrets beside it)`
    : envFile && holds(folder, envFile)
      ? `${spelt} holds ${envFile}, the install's secrets`
      : folder === dataDir
        ? `${spelt} is the data folder (every task's folder is in it)`
        : holds(folder, dataDir)
          ? `${spelt} holds the data folder ${dataDir} (every task's folder is in it)`
          : holds(dataDir, folder)
            ? `${spelt} is inside the data folder ${dataDir} (every task's folder is in it)`
            : undefined;
  if (!problem) return undefined;
  const suggestion = path.join(configDir, 'mcp', name);
  return `${problem}, which no server's jail may show it: give the server a folder that holds only its own files (e.g. ${suggestion}), or leave "dir" out (it then starts in an empty folder of its own)`;
}

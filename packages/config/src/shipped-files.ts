/**
 * Where the files that ship with agentq are: the default configuration file (its built-in agents) and
 * `prompts/` (theirs, the planner's, the summariser's, the fences lesson). In a checkout they are at its
 * root; in an install from the `@agentq/config` tarball, in the package's `shipped/` folder, copied there
 * when it is packed (`prepack`). A checkout is told by the package's tsconfig.json, which no tarball
 * holds: a `shipped/` left behind by a pack that stopped half-way is never read in place of the root's.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const inCheckout = existsSync(fileURLToPath(new URL('../tsconfig.json', import.meta.url)));

/** The folder holding the shipped `agentq.config.yaml` and `prompts/`. */
export const SHIPPED_DIR = fileURLToPath(new URL(inCheckout ? '../../../' : '../shipped/', import.meta.url));

/** The configuration file that ships with agentq. */
export const DEFAULT_CONFIG_FILE = path.join(SHIPPED_DIR, 'agentq.config.yaml');

/** The shipped prompts (`<name>.md`). */
export const PROMPTS_DIR = path.join(SHIPPED_DIR, 'prompts');

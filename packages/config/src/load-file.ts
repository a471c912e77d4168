/**
 * Finds and reads the configuration file: the path in AGENTQ_CONFIG, else `agentq.config.yaml` (`.yml`,
 * `.json`) in the working directory, else the file that ships with agentq (its built-in agents). A
 * top-level key a file leaves out is the shipped file's: a file of `models` alone keeps the built-in
 * agents; a file with `agents` has those agents and no others. Instructions given as files are read
 * here, once, so a bad path stops the process at start.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from './config-error.js';
import { webhookSecret } from './webhook-settings.js';
import { fileSchema, type AgentqFile, type SecretValue } from './file-schema.js';
import { sendableKeyProblems } from './sendable-keys.js';
import { sharedKeyProblems } from './shared-keys.js';
import { DEFAULT_CONFIG_FILE } from './shipped-files.js';
import { sharedSigningKeyProblems, unsignedWebhookProblems } from './signing-keys.js';

export const FILE_NAMES = ['agentq.config.yaml', 'agentq.config.yml', 'agentq.config.json'];

/** An agent as the workers run it: its instructions read, its defaults applied by the caller. */
export interface LoadedFile {
  /** The file read (absolute). */
  path: string;
  /** Its folder: relative paths in it are from here. */
  dir: string;
  settings: AgentqFile;
  /** Each agent's instructions, as text. */
  instructions: Record<string, string>;
  /** The values of the variables the file names as secrets (`{env: NAME}`), read at start. */
  secretValues: Record<string, string>;
}

/** Where the configuration file is, for this working directory and environment. */
export function findConfigFile(options: { env: NodeJS.ProcessEnv; cwd?: string }): string {
  const cwd = options.cwd ?? process.cwd();
  const named = options.env.AGENTQ_CONFIG;
  if (named) {
    const file = path.resolve(cwd, named);
    if (!existsSync(file)) throw new ConfigError(`AGENTQ_CONFIG="${named}": there is no such file (${file}).`);
    return file;
  }
  for (const name of FILE_NAMES) {
    const file = path.join(cwd, name);
    if (existsSync(file)) return file;
  }
  return DEFAULT_CONFIG_FILE;
}

/**
 * Reads, checks and completes a configuration file; a ConfigError names every problem and where it is.
 * `env`: where the secrets it names by variable are read (each must be set). Default: none are read.
 */
export function loadConfigFile(file: string, env?: NodeJS.ProcessEnv): LoadedFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${file}: cannot be read (${(error as Error).message}).`);
  }
  const raw = parseText(file, text);
  if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw)))
    throw new ConfigError(`${file}: holds no mapping of settings (agents, mcpServers, models...).`);
  const parsed = fileSchema.safeParse(withDefaults(file, (raw ?? {}) as Record<string, unknown>));
  if (!parsed.success) throw new ConfigError(`${file} is not a valid configuration:\n${describeIssues(parsed.error)}`);
  const dir = path.dirname(file);
  const instructions: Record<string, string> = {};
  const problems: string[] = [];
  for (const [name, agent] of Object.entries(parsed.data.agents)) {
    if (typeof agent.instructions === 'string') {
      instructions[name] = agent.instructions.trim();
      continue;
    }
    const prompt = path.resolve(dir, agent.instructions.file);
    try {
      instructions[name] = readFileSync(prompt, 'utf8').trim();
    } catch (error) {
      problems.push(
        `  agents.${name}.instructions.file: cannot read ${prompt} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  for (const [name, server] of Object.entries(parsed.data.mcpServers)) {
    if (!('command' in server)) continue;
    const folder = path.resolve(dir, server.dir ?? '.');
    if (!existsSync(folder)) problems.push(`  mcpServers.${name}.dir: there is no folder ${folder}`);
  }
  const secretValues: Record<string, string> = {};
  if (env)
    for (const { where, name } of namedSecrets(parsed.data)) {
      const value = env[name];
      if (value) secretValues[name] = value;
      else problems.push(`  ${where}: names the variable ${name}, which is not set`);
      const signing = where.endsWith('.webhook.secret') && value ? webhookSecret.safeParse(value) : undefined;
      if (signing && !signing.success)
        problems.push(`  ${where}: the variable ${name} is not ${signing.error.issues[0]!.message}`);
    }
  problems.push(...sendableKeyProblems(parsed.data, secretValues), ...sharedKeyProblems(parsed.data, secretValues));
  if (env) {
    const signing = { settings: parsed.data, secretValues, installSecret: env.AGENTQ_WEBHOOK_SECRET };
    problems.push(...sharedSigningKeyProblems(signing), ...unsignedWebhookProblems(signing));
  }
  if (problems.length) throw new ConfigError(`${file} is not a valid configuration:\n${problems.join('\n')}`);
  return { path: file, dir, settings: parsed.data, instructions, secretValues };
}

/** Every `{env: NAME}` of the file, with where it is. */
function namedSecrets(settings: AgentqFile): Array<{ where: string; name: string }> {
  const found: Array<{ where: string; name: string }> = [];
  for (const [server, spec] of Object.entries(settings.mcpServers)) {
    const values = 'command' in spec ? { env: spec.env } : { headers: spec.headers };
    for (const [field, map] of Object.entries(values))
      for (const [key, value] of Object.entries(map as Record<string, SecretValue>))
        if (typeof value === 'object' && 'env' in value)
          found.push({ where: `mcpServers.${server}.${field}.${key}`, name: value.env });
  }
  for (const [tenant, { secrets, keys, webhook }] of Object.entries(settings.tenants)) {
    for (const [key, { env }] of Object.entries(secrets))
      found.push({ where: `tenants.${tenant}.secrets.${key}`, name: env });
    if (webhook?.secret) found.push({ where: `tenants.${tenant}.webhook.secret`, name: webhook.secret.env });
    keys.forEach((key, index) => {
      if ('env' in key) found.push({ where: `tenants.${tenant}.keys.${index}`, name: key.env });
    });
  }
  return found;
}

function parseText(file: string, text: string): unknown {
  try {
    return file.endsWith('.json') ? JSON.parse(text) : parseYaml(text, { prettyErrors: true });
  } catch (error) {
    throw new ConfigError(
      `${file}: is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
}

/** The top-level keys `raw` leaves out, from the shipped file, its instruction files named from where they are. */
function withDefaults(file: string, raw: Record<string, unknown>): Record<string, unknown> {
  if (path.resolve(file) === DEFAULT_CONFIG_FILE) return raw;
  const shipped = parseText(DEFAULT_CONFIG_FILE, readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as Record<string, unknown>;
  const merged = { ...raw };
  for (const [key, value] of Object.entries(shipped)) {
    if (key in merged) continue;
    merged[key] = key === 'agents' ? absoluteInstructions(value as Record<string, Record<string, unknown>>) : value;
  }
  return merged;
}

function absoluteInstructions(agents: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const dir = path.dirname(DEFAULT_CONFIG_FILE);
  return Object.fromEntries(
    Object.entries(agents).map(([name, agent]) => {
      const instructions = agent.instructions as { file?: string } | string;
      return [
        name,
        typeof instructions === 'object' && instructions.file
          ? { ...agent, instructions: { file: path.resolve(dir, instructions.file) } }
          : agent,
      ];
    }),
  );
}

/** One line per issue: where in the file, and what to fix. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length ? issue.path.map(String).join('.') : '(the file)';
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown ${issue.keys.length > 1 ? 'keys' : 'key'} ${issue.keys.map((key) => `"${key}"`).join(', ')} (see docs/configuration.md)`
          : issue.message;
      return `  ${where}: ${message}`;
    })
    .join('\n');
}

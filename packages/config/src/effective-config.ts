/**
 * The configuration as a process runs it, for `agentq config check`: the file's settings with their
 * defaults filled in, and the environment's, every secret redacted (keys, passwords, a server's
 * credentials): what is printed can be pasted into an issue.
 */
import { stringify } from 'yaml';
import type { LoadedFile } from './load-file.js';

const REDACTED = '<redacted>';
/** Variables whose whole value is a secret. */
const SECRET_VARIABLES = new Set(['OPENAI_API_KEY', 'AGENTQ_API_KEY', 'AGENTQ_WEBHOOK_SECRET']);

/** `config`: a loaded configuration (loadConfig's): the environment's settings and the file. */
export function effectiveConfig(config: { file: LoadedFile }): string {
  const { file, ...environment } = config;
  const env: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined) continue;
    if (SECRET_VARIABLES.has(name)) env[name] = REDACTED;
    else if (typeof value === 'string' && /^rediss?:\/\//.test(value)) env[name] = withoutPassword(value);
    else env[name] = value;
  }
  const settings = file.settings;
  const mcpServers = Object.fromEntries(
    Object.entries(settings.mcpServers).map(([name, server]) => [
      name,
      'command' in server
        ? { ...server, env: redactValues(server.env) }
        : { ...server, headers: redactValues(server.headers) },
    ]),
  );
  return stringify(
    {
      file: file.path,
      settings: { ...settings, mcpServers },
      secrets: Object.fromEntries(Object.keys(file.secretValues).map((name) => [name, `${REDACTED} (set)`])),
      environment: env,
    },
    { lineWidth: 0 },
  );
}

/** Literal values hidden; a reference (`{env}`, `{tenantSecret}`) says where the secret is, so it stays. */
function redactValues(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(values).map(([name, value]) => [name, typeof value === 'string' ? REDACTED : value]),
  );
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = REDACTED;
    return parsed.toString();
  } catch {
    return url;
  }
}

/** A configuration file for a test, written to a folder of its own: what it leaves out is the shipped file's. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Writes `settings` as agentq.config.json in a new folder; its path, for AGENTQ_CONFIG. */
export function configFile(settings: Record<string, unknown>): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agentq-config-')), 'agentq.config.json');
  writeFileSync(file, JSON.stringify(settings, null, 2));
  return file;
}

export interface TestTenant {
  /** Its API keys, as clients send them (each put in a variable of its own, as the file wants). */
  keys?: string[];
  admin?: boolean;
  weight?: number;
  limits?: Record<string, number>;
  webhook?: Record<string, unknown>;
}

let keyVariables = 0;

/**
 * The environment of a configuration with these tenants (and `more` of the file's settings): AGENTQ_CONFIG
 * naming the file, and each key in the variable the file names.
 */
export function tenantsEnv(
  tenants: Record<string, TestTenant>,
  more: Record<string, unknown> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  const settings = Object.fromEntries(
    Object.entries(tenants).map(([name, { keys, ...rest }]) => [
      name,
      {
        ...rest,
        keys: (keys ?? []).map((key) => {
          const variable = `AGENTQ_TEST_KEY_${++keyVariables}`;
          env[variable] = key;
          return { env: variable };
        }),
      },
    ]),
  );
  return { ...env, AGENTQ_CONFIG: configFile({ ...more, tenants: settings }) };
}

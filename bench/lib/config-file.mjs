/** A configuration file for a benchmark's agentq (what it leaves out is the shipped file's), and its tenants' keys. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Writes `settings` as agentq.config.json in a new folder; its path, for AGENTQ_CONFIG. */
export function configFile(settings) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agentq-bench-config-')), 'agentq.config.json');
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

/** The environment of `{tenant: {keys: [...], ...}}`: AGENTQ_CONFIG, and each key in the variable the file names. */
export function tenantsEnv(tenants) {
  const env = {};
  let count = 0;
  const settings = Object.fromEntries(
    Object.entries(tenants).map(([name, { keys = [], ...rest }]) => [
      name,
      {
        ...rest,
        keys: keys.map((key) => {
          const variable = `AGENTQ_BENCH_KEY_${++count}`;
          env[variable] = key;
          return { env: variable };
        }),
      },
    ]),
  );
  return { ...env, AGENTQ_CONFIG: configFile({ tenants: settings }) };
}

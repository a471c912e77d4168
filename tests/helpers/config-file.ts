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

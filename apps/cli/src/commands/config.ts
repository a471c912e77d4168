/**
 * `agentq config check [FILE]`: validates the configuration file (FILE, else the one this directory
 * and environment name) with the environment, and prints the effective configuration, secrets
 * redacted. A problem is a ConfigError: said with where it is, exit status 2.
 */
import path from 'node:path';
import { effectiveConfig, loadConfig } from '@agentq/config';
import { UsageError } from '../usage-error.js';

export function configCommand(action: string | undefined, file: string | undefined): number {
  if (action !== 'check') throw new UsageError('usage: agentq config check [FILE]');
  const config = loadConfig(file ? { configFile: path.resolve(file) } : {});
  const agents = Object.keys(config.file.settings.agents);
  process.stdout.write(effectiveConfig(config));
  process.stderr.write(
    `ok: ${config.file.path} (${agents.length} agent${agents.length === 1 ? '' : 's'}: ${agents.join(', ')})\n`,
  );
  return 0;
}

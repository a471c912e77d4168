/**
 * `agentq config init [DIR]`: config-init.ts.
 * `agentq config check [FILE]`: validates the configuration file (FILE, else the one this directory
 * and environment name) with the environment, prints the effective configuration, secrets redacted,
 * then starts each MCP server as a worker would (a stdio one in its agent's jail, a remote one through
 * the egress rules) and lists its tools. A problem of the file is a ConfigError: said with where it is,
 * exit status 2; a server that does not start (and is not `optional`): exit status 1.
 */
import path from 'node:path';
import { effectiveConfig, loadConfig } from '@agentq/config';
import { checkMcpServers, redisAddresses, type ServerCheck } from '@agentq/worker';
import { paint } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export async function configCommand(action: string | undefined, file: string | undefined): Promise<number> {
  if (action === 'init') return (await import('./config-init.js')).configInitCommand(file);
  if (action !== 'check') throw new UsageError('usage: agentq config check [FILE], or agentq config init [DIR]');
  const config = loadConfig(file ? { configFile: path.resolve(file) } : {});
  const agents = Object.keys(config.file.settings.agents);
  process.stdout.write(effectiveConfig(config));
  const checks = await checkMcpServers({ config, serviceAddresses: await redisAddresses(config.REDIS_URL) });
  if (checks.length) process.stderr.write('MCP servers:\n');
  for (const check of checks) process.stderr.write(`${describe(check)}\n`);
  const failed = checks.filter((check) => check.error && !check.optional);
  const what = `${config.file.path} (${agents.length} agent${agents.length === 1 ? '' : 's'}: ${agents.join(', ')})`;
  if (failed.length) {
    process.stderr.write(
      `FAIL: ${what}: ${failed.length} MCP server${failed.length === 1 ? '' : 's'} did not start (above: what each said)\n`,
    );
    return 1;
  }
  process.stderr.write(`ok: ${what}\n`);
  return 0;
}

function describe(check: ServerCheck): string {
  const who = `${check.server} (agent ${check.agent}${check.tenant === 'default' ? '' : `, tenant ${check.tenant}`})`;
  if (check.tools) {
    const count = `${check.tools.length} tool${check.tools.length === 1 ? '' : 's'}`;
    return `  ${paint.green('ok  ')} ${who}: ${count}: ${check.tools.join(', ')}`;
  }
  return check.optional
    ? `  ${paint.yellow('warn')} ${who}, optional: ${check.error}`
    : `  ${paint.red('FAIL')} ${who}: ${check.error}`;
}

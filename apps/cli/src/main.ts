#!/usr/bin/env node
/**
 * `agentq`: the one entry point of every process.
 *   agentq start                       API + one worker per pool (what `npm start` runs)
 *   agentq api                         the HTTP API alone
 *   agentq worker [--pools coder,file] [--concurrency N]
 *   agentq demo                        start against a built-in scripted model
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '@agentq/config';
import { apiCommand } from './commands/api.js';
import { demoCommand } from './commands/demo.js';
import { startCommand } from './commands/start.js';
import { workerCommand } from './commands/worker.js';
import { UsageError } from './usage-error.js';

const HELP = `usage: agentq <command>
  start                                   the API and one worker process per pool
  api                                     the HTTP API alone
  worker [--pools coder,file,casual] [--concurrency N]
                                          a worker process for those pools (default: all)
  demo                                    start against a built-in scripted model (no LLM needed)
Configuration comes from the environment (and ./.env); see the README.`;

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { pools: { type: 'string' }, concurrency: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const command = positionals[0];
  if (values.help || !command) {
    console.log(HELP);
    return;
  }
  switch (command) {
    case 'start':
      return startCommand({ config: loadConfig() });
    case 'api':
      return apiCommand(loadConfig());
    case 'worker':
      return workerCommand(loadConfig(), values);
    case 'demo':
      return demoCommand();
    default:
      throw new UsageError(`Unknown command "${command}".\n${HELP}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    console.error(`agentq: ${(error as Error).message}`);
    process.exit(2);
  }
  console.error('agentq:', error);
  process.exit(1);
});

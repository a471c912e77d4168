#!/usr/bin/env node
/**
 * `agentq`: the one entry point of every process, and the terminal client of the API.
 *   agentq start | api | worker | demo         run agentq
 *   agentq submit | watch | status | usage | cancel | retry | fork | delete   talk to a running agentq
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '@agentq/config';
import { ApiClient, ClientError } from './api-client.js';
import { apiCommand } from './commands/api.js';
import { demoCommand } from './commands/demo.js';
import { doctorCommand } from './commands/doctor.js';
import { configCommand } from './commands/config.js';
import { cancelCommand, deleteCommand, forkCommand, retryCommand, statusCommand } from './commands/manage.js';
import { schedulesCommand } from './commands/schedules.js';
import { startCommand } from './commands/start.js';
import { submitCommand } from './commands/submit.js';
import { usageCommand } from './commands/usage.js';
import { watchCommand } from './commands/watch.js';
import { workerCommand } from './commands/worker.js';
import { UsageError } from './usage-error.js';
import { withRedisCredentials } from './private-redis.js';

const HELP = `usage: agentq <command>

Run agentq:
  start                                   the API and one worker process per pool
  --version                               agentq's version
  api                                     the HTTP API alone
  worker [--pools planner,coder,...] [--concurrency N]
                                          a worker process for those pools: the planner and any agent
                                          of the configuration file ("agents": every agent; default: all)
  demo                                    start against a built-in scripted model (no LLM needed)
  doctor                                  what isolation each pool's tools get here, Redis, the API's access
  config check [FILE]                     validate the configuration file (agents, MCP servers, models)
                                          with the environment; print the effective configuration

Talk to a running agentq (--url, --api-key, or AGENTQ_URL, AGENTQ_API_KEY; --json for scripts):
  submit FILE.jsonl|- [--agent A] [--priority N] [--model M] [--watch]
                                          one task per line (JSON or a plain prompt); prints the ids;
                                          --watch shows the batch's progress, exits 1 if any failed
  watch ID                                the task's steps as they happen, then its answer
  status                                  pools, queue depths, workers online
  usage [--tenant T] / usage --all        the key's tenant's tasks, bytes and spending against its
                                          limits (an admin key: any tenant's, or every tenant's)
  cancel ID                               cancel a task (and its subtasks)
  retry ID                                run a failed or cancelled task again; prints the new id
  cancel --batch B / retry --batch B      the same for every task of a batch that has not ended /
                                          that failed or was cancelled
  fork ID --from-step N [--prompt TEXT] [--model M] [--agent A]
                                          a new task from the task's steps before N (not run again),
                                          then its own prompt or model; prints the new id
  delete ID                               remove an ended task for good: its record, events, subtasks, files
  delete --batch B                        the same for every ended task of a batch
  schedules                               the tenant's schedules: when each runs, its next and last run

Configuration: agentq.config.yaml (agents, tools, MCP servers, models; AGENTQ_CONFIG names another)
and the environment (and ./.env) for endpoints, secrets and ports; see docs/configuration.md.`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      pools: { type: 'string' },
      concurrency: { type: 'string' },
      url: { type: 'string' },
      'api-key': { type: 'string' },
      agent: { type: 'string' },
      priority: { type: 'string' },
      model: { type: 'string' },
      prompt: { type: 'string' },
      'from-step': { type: 'string' },
      batch: { type: 'string' },
      tenant: { type: 'string' },
      watch: { type: 'boolean' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  const [command, argument, third] = positionals;
  if (values.version) {
    console.log(
      `agentq ${(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version}`,
    );
    return 0;
  }
  if (values.help || !command) {
    console.log(HELP);
    return 0;
  }
  const client = (config: Config) => {
    const apiKey = values['api-key'] ?? config.AGENTQ_API_KEY;
    return new ApiClient({ url: values.url ?? config.AGENTQ_URL, ...(apiKey ? { apiKey } : {}) });
  };
  switch (command) {
    case 'start':
      await startCommand({ config: loadConfig() });
      return -1;
    case 'api': {
      const config = loadConfig();
      await withRedisCredentials(config, () => apiCommand(config));
      return -1;
    }
    case 'worker': {
      const config = loadConfig();
      await withRedisCredentials(config, () => workerCommand(config, values));
      return -1;
    }
    case 'demo':
      await demoCommand();
      return -1;
    case 'doctor':
      return doctorCommand(loadConfig(), values);
    case 'config':
      return configCommand(argument, third);
    case 'submit':
      return submitCommand(client(loadConfig()), argument, values);
    case 'watch':
      return watchCommand(client(loadConfig()), argument, values);
    case 'status':
      return statusCommand(client(loadConfig()), values);
    case 'usage':
      return usageCommand(client(loadConfig()), values);
    case 'cancel':
      return cancelCommand(client(loadConfig()), argument, values);
    case 'retry':
      return retryCommand(client(loadConfig()), argument, values);
    case 'fork':
      return forkCommand(client(loadConfig()), argument, values);
    case 'delete':
      return deleteCommand(client(loadConfig()), argument, values);
    case 'schedules':
      return schedulesCommand(client(loadConfig()), values);
    default:
      throw new UsageError(`Unknown command "${command}".\n${HELP}`);
  }
}

main(process.argv.slice(2)).then(
  // Long-running commands return -1 and keep the process alive; the others exit with their status.
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      error instanceof ConfigError ||
      error instanceof ClientError ||
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    ) {
      console.error(`agentq: ${(error as Error).message}`);
      process.exit(error instanceof ClientError ? 1 : 2);
    }
    // A file or a connection a user named that is not there: said plainly, no stack trace.
    const code = (error as NodeJS.ErrnoException).code;
    if (code && /^E[A-Z]+$/.test(code)) {
      console.error(`agentq: ${(error as Error).message}`);
      process.exit(1);
    }
    console.error('agentq:', error);
    process.exit(1);
  },
);

#!/usr/bin/env node
/**
 * `agentq`: the one entry point of every process, and the terminal client of the API.
 *   agentq start | api | worker | demo         run agentq
 *   agentq submit | list | get | result | watch | status | usage | cancel | retry | fork | delete | schedules | webhooks
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ApiClient } from './api-client.js';
import { UsageError } from './usage-error.js';

/*
 * Each command loads only what it needs (a dynamic import): `agentq --version` or `agentq list` does not
 * load the configuration's schema, the worker or the API.
 */

/** A client of the API from --url/--api-key, else AGENTQ_URL/AGENTQ_API_KEY (and ./.env, as every command reads it). */
async function client(values: { url?: string | undefined; 'api-key'?: string | undefined }): Promise<ApiClient> {
  const { clientSettings } = await import('@agentq/config/client-settings');
  const settings = clientSettings();
  const url = values.url ?? settings.url;
  if (!URL.canParse(url)) throw new UsageError(`"${url}" is not a URL: give --url or AGENTQ_URL as http://host:port`);
  const apiKey = values['api-key'] ?? settings.apiKey;
  const { ApiClient } = await import('./api-client.js');
  return new ApiClient({ url, ...(apiKey ? { apiKey } : {}) });
}

/** The whole configuration (the file and the environment), for the commands that run agentq. */
async function config() {
  return (await import('@agentq/config')).loadConfig();
}

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
  config init [DIR]                       write a configuration to start from in DIR (default: here):
                                          agentq.config.yaml, its prompts/, .env.example; never overwrites

Talk to a running agentq (--url, --api-key, or AGENTQ_URL, AGENTQ_API_KEY; --json for scripts):
  submit FILE.jsonl|- [--agent A] [--priority N] [--model M] [--batch B] [--watch]
                                          one task per line (JSON or a plain prompt); prints the ids;
                                          --watch shows the batch's progress, exits 1 if any failed
  list [--status S] [--batch B] [--limit N]
                                          the newest tasks: id, status, agent, created, prompt
  get ID                                  the task as the API shows it (JSON)
  result ID                               its answer alone (exit 1 when it did not complete)
  watch ID                                the task's steps as they happen, then its answer
  status                                  pools, queue depths, workers online
  usage [--tenant T] / usage --all        the key's tenant's tasks, bytes and spending against its
                                          limits (an admin key: any tenant's, or every tenant's)
  approve ID CALL / reject ID CALL [--reason TEXT]
                                          decide a call that waits for approval (the task's
                                          waitingFor.calls); a rejection's reason goes to the model
  cancel ID                               cancel a task (and its subtasks)
  retry ID                                run a failed or cancelled task again; prints the new id
  cancel --batch B / retry --batch B      the same for every task of a batch that has not ended /
                                          that failed or was cancelled
  fork ID --from-step N [--prompt TEXT] [--model M] [--agent A]
                                          a new task from the task's steps before N (not run again),
                                          then its own prompt or model; prints the new id
  delete ID                               remove an ended task for good: its record, events, subtasks, files
  delete --batch B                        the same for every ended task of a batch
  schedules [--tenant T]                  the tenant's schedules (an admin key: every tenant's, or T's):
                                          when each runs, its next and last run
  webhooks secret [--tenant T]            the key the tenant's webhooks are signed with (whsec_...),
                                          for its receiver (an admin key: any tenant's)

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
      reason: { type: 'string' },
      'from-step': { type: 'string' },
      batch: { type: 'string' },
      tenant: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
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
  switch (command) {
    case 'start':
      await (await import('./commands/start.js')).startCommand({ config: await config() });
      return -1;
    case 'api': {
      const settings = await config();
      const { withRedisCredentials } = await import('./private-redis.js');
      const { apiCommand } = await import('./commands/api.js');
      await withRedisCredentials(settings, () => apiCommand(settings));
      return -1;
    }
    case 'worker': {
      const settings = await config();
      const { withRedisCredentials } = await import('./private-redis.js');
      const { workerCommand } = await import('./commands/worker.js');
      await withRedisCredentials(settings, () => workerCommand(settings, values));
      return -1;
    }
    case 'demo':
      await (await import('./commands/demo.js')).demoCommand();
      return -1;
    case 'doctor':
      return (await import('./commands/doctor.js')).doctorCommand(await config(), values);
    case 'config':
      return (await import('./commands/config.js')).configCommand(argument, third);
    case 'submit':
      return (await import('./commands/submit.js')).submitCommand(await client(values), argument, values);
    case 'watch':
      return (await import('./commands/watch.js')).watchCommand(await client(values), argument, values);
    case 'list':
      return (await import('./commands/tasks.js')).listCommand(await client(values), values);
    case 'get':
      return (await import('./commands/tasks.js')).getCommand(await client(values), argument, values);
    case 'result':
      return (await import('./commands/tasks.js')).resultCommand(await client(values), argument);
    case 'status':
      return (await import('./commands/manage.js')).statusCommand(await client(values), values);
    case 'usage':
      return (await import('./commands/usage.js')).usageCommand(await client(values), values);
    case 'approve':
    case 'reject':
      return (await import('./commands/approvals.js')).decideCommand(
        await client(values),
        command === 'approve',
        argument,
        third,
        values,
      );
    case 'cancel':
      return (await import('./commands/manage.js')).cancelCommand(await client(values), argument, values);
    case 'retry':
      return (await import('./commands/manage.js')).retryCommand(await client(values), argument, values);
    case 'fork':
      return (await import('./commands/manage.js')).forkCommand(await client(values), argument, values);
    case 'delete':
      return (await import('./commands/manage.js')).deleteCommand(await client(values), argument, values);
    case 'schedules':
      return (await import('./commands/schedules.js')).schedulesCommand(await client(values), values);
    case 'webhooks':
      return (await import('./commands/webhooks.js')).webhooksCommand(await client(values), argument, values);
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
    // By name: their classes are in modules a command may not have loaded.
    const name = (error as Error | undefined)?.name;
    if (
      error instanceof UsageError ||
      name === 'ConfigError' ||
      name === 'ClientError' ||
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    ) {
      console.error(`agentq: ${(error as Error).message}`);
      process.exit(name === 'ClientError' ? 1 : 2);
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

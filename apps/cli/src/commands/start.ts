/**
 * `agentq start` (what `npm start` runs): the API and one worker process per pool, as child
 * processes of this one, the same entry points a deployment scales one by one. Starts a private
 * Redis when none answers, and refuses to start without an LLM endpoint, saying how to set one.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LLM_SETUP_HELP, llmConfigured, type Config } from '@agentq/config';
import { AGENT_POOLS } from '@agentq/queue';
import { onPath, startPrivateRedis } from '../private-redis.js';
import { redisAnswers } from '../redis-probe.js';
import { onShutdown } from '../shutdown.js';
import { UsageError } from '../usage-error.js';

const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

export interface StartOptions {
  config: Config;
  /** The environment the children get (they parse their own config from it). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Called before the children are stopped. */
  onStop?: () => Promise<void>;
}

export async function startCommand(options: StartOptions): Promise<void> {
  const { config } = options;
  // eslint-disable-next-line no-restricted-properties -- the children parse their own config from this environment
  const env = { ...(options.env ?? process.env) };
  if (!llmConfigured(config)) throw new UsageError(LLM_SETUP_HELP);

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    await options.onStop?.();
    await Promise.all(children.map((child) => stopChild(child)));
  };
  onShutdown(stopAll);

  if (!(await redisAnswers(config.REDIS_URL))) {
    if (!onPath('redis-server')) {
      throw new UsageError(
        `Nothing answers at REDIS_URL=${config.REDIS_URL} and redis-server is not on the PATH.\n` +
          'Start a Redis (e.g. `docker run -p 6379:6379 redis:7`, or `apt-get install redis-server`), or point REDIS_URL at one.',
      );
    }
    console.log(`[agentq] nothing answers at ${config.REDIS_URL}: starting a private redis-server (data in ${config.AGENTQ_DATA_DIR}/redis, append-only file on)`);
    children.push(await startPrivateRedis({ url: config.REDIS_URL, dataDir: config.AGENTQ_DATA_DIR }));
  }

  const spawnChild = (args: string[]) => {
    const child = fork(MAIN, args, { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(`[agentq] \`agentq ${args.join(' ')}\` exited (${signal ?? `code ${code}`}); stopping everything.`);
      void stopAll().finally(() => process.exit(1));
    });
    return new Promise<{ url?: string }>((resolve) => {
      child.on('message', (message: { type?: string; url?: string }) => {
        if (message?.type === 'ready') resolve(message);
      });
    });
  };

  const [api] = await Promise.all([
    spawnChild(['api']),
    ...AGENT_POOLS.map((pool) => spawnChild(['worker', '--pools', pool])),
  ]);
  console.log(`[agentq] ready: API at ${api.url} (pools: ${AGENT_POOLS.join(', ')}; model ${config.AGENTQ_MODEL})`);
  console.log(`[agentq] try: curl -s -X POST ${api.url}/v1/tasks -H 'content-type: application/json' -d '{"tasks":[{"prompt":"Say hello","agent":"casual"}]}'`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

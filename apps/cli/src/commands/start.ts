/**
 * `agentq start` (what `npm start` runs): the API and one worker process per pool, as child
 * processes of this one, the same entry points a deployment scales one by one. Starts a private
 * Redis when none answers, and refuses to start without an LLM endpoint, saying how to set one.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { isLoopbackHost, LLM_SETUP_HELP, llmConfigured, poolNames, type Config } from '@agentq/config';
import { createLogger, endLogs, prettyLogs, type Logger } from '@agentq/telemetry';
import { onPath, passwordHelp, redactedUrl, startPrivateRedis, withStoredPassword } from '../private-redis.js';
import { probeModelEndpoint } from '../probe-model.js';
import { probeRedis } from '../redis-probe.js';
import { onShutdown } from '../shutdown.js';
import { UsageError } from '../usage-error.js';

const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

/** A worker that exited is started again after this, doubled at each exit up to the most, and back to the first once one ran a minute. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const RESTART_RESET_MS = 60_000;

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
  const logger = createLogger({ name: 'agentq', level: config.AGENTQ_LOG_LEVEL, format: config.AGENTQ_LOG_FORMAT });
  // The children write to pipes, not this terminal: they are told which format this process chose.
  const pretty = prettyLogs(config.AGENTQ_LOG_FORMAT);
  env.AGENTQ_LOG_FORMAT = pretty ? 'pretty' : 'json';

  // Each child in a process group of its own, so a Ctrl-C in the terminal reaches only this process,
  // which stops them in order: workers first (they hand their running tasks back, through Redis),
  // then the API, then Redis.
  const workers: ChildProcess[] = [];
  const services: ChildProcess[] = [];
  let redis: ChildProcess | undefined;
  /** Workers waiting to be started again. */
  const restarts = new Set<NodeJS.Timeout>();
  let stopping = false;
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    for (const timer of restarts) clearTimeout(timer);
    logger.info('stopping: the workers hand their running tasks back to the queue, then the API and Redis stop');
    // Past the workers' grace for running jobs, so that they hand them back before any SIGKILL.
    await Promise.all(workers.map((child) => stopChild(child, config.AGENTQ_SHUTDOWN_GRACE_MS + 10_000)));
    await Promise.all(services.map((child) => stopChild(child, 10_000)));
    await options.onStop?.();
    if (redis) await stopChild(redis, 10_000);
    logger.info('stopped');
  };
  onShutdown(stopAll, logger);
  // A reader of this output that went away (a `| tee` stopped by the same Ctrl-C) must not end this
  // process half-way through stopping the others: the forwarded lines are dropped from then on.
  process.stdout.on('error', () => undefined);

  env.REDIS_URL = await redisFor({
    config,
    logger,
    onStarted: (child) => {
      redis = child;
    },
  });
  const modelProblem = await probeModelEndpoint(config);
  if (modelProblem)
    logger.warn(
      `the model endpoint ${modelProblem}; tasks wait and then fail until it answers (model ${config.AGENTQ_MODEL}).`,
    );

  // A worker that exits is started again (its tasks are handed back or resumed from Redis), after 1 s,
  // doubling each time up to 30 s, back to 1 s once one has run a minute; the API's exit stops everything.
  const spawnChild = (name: string, args: string[], childEnv: NodeJS.ProcessEnv = env, delayMs = RESTART_FIRST_MS) => {
    const child = fork(MAIN, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
    const startedAt = Date.now();
    forwardLines(child.stdout!, name, pretty);
    forwardLines(child.stderr!, name, pretty);
    const worker = args[0] === 'worker';
    (worker ? workers : services).push(child);
    child.once('exit', (code, signal) => {
      if (stopping) return;
      const how = signal ?? `code ${code}`;
      if (worker) {
        workers.splice(workers.indexOf(child), 1);
        const delay = Date.now() - startedAt >= RESTART_RESET_MS ? RESTART_FIRST_MS : delayMs;
        logger.warn(`\`agentq ${args.join(' ')}\` exited (${how}); starting it again in ${delay / 1000} s.`);
        const timer = setTimeout(() => {
          restarts.delete(timer);
          if (!stopping) void spawnChild(name, args, childEnv, Math.min(delay * 2, RESTART_MAX_MS));
        }, delay);
        restarts.add(timer);
        return;
      }
      logger.error(`\`agentq ${args.join(' ')}\` exited (${how}); stopping everything.`);
      void stopAll()
        .then(() => endLogs(logger))
        .finally(() => process.exit(1));
    });
    return new Promise<{ url?: string; listening?: string }>((resolve) => {
      child.on('message', (message: { type?: string; url?: string; listening?: string }) => {
        if (message?.type === 'ready') resolve(message);
      });
    });
  };

  // With AGENTQ_METRICS_PORT, each worker serves its metrics on a port of its own: the pools' order from it.
  const metricsPort = config.AGENTQ_METRICS_PORT;
  const pools = poolNames(config);
  const [api] = await Promise.all([
    spawnChild('api', ['api']),
    ...pools.map((pool, index) =>
      spawnChild(
        `worker ${pool}`,
        ['worker', '--pools', pool],
        metricsPort ? { ...env, AGENTQ_METRICS_PORT: String(metricsPort + index) } : env,
      ),
    ),
  ]);
  const where =
    api.url && api.listening && !api.url.includes(api.listening)
      ? ` (listening on ${api.listening}, every interface)`
      : '';
  logger.info(
    { url: api.url, pools, model: config.AGENTQ_MODEL },
    `ready: API at ${api.url}${where} (pools: ${pools.join(', ')}; model ${config.AGENTQ_MODEL})`,
  );
  logger.info(
    `try: curl -s -X POST ${api.url}/v1/tasks -H 'content-type: application/json' -d '{"tasks":[{"prompt":"Say hello","agent":"casual"}]}'`,
  );
}

/**
 * A child's output, line by line, on this process's stdout: human-readable lines prefixed with the
 * child's name; JSON lines as they are (each carries its process's name and pid).
 */
function forwardLines(stream: Readable, name: string, pretty: boolean): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) =>
    process.stdout.write(pretty ? `${name.padEnd(15)}| ${line}\n` : `${line}\n`),
  );
}

function stopChild(child: ChildProcess, forceAfterMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), forceAfterMs);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * The Redis the processes use: the one at REDIS_URL; or, when a private one from an earlier start still
 * runs there, that one with its password; or, when nothing answers at a loopback address, a new private one.
 */
async function redisFor(options: {
  config: Config;
  logger: Logger;
  onStarted: (child: ChildProcess) => void;
}): Promise<string> {
  const { config } = options;
  const url = config.REDIS_URL;
  const dir = path.resolve(config.AGENTQ_DATA_DIR, 'redis');
  const probe = await probeRedis(url);
  if (probe === 'ok') return url;
  if (probe === 'auth') {
    const stored = withStoredPassword(url, config.AGENTQ_DATA_DIR);
    if (stored && (await probeRedis(stored)) === 'ok') return stored;
    throw new UsageError(passwordHelp(url, config.AGENTQ_DATA_DIR));
  }
  if (!isLoopbackHost(new URL(url).hostname)) {
    throw new UsageError(
      `Nothing answers at REDIS_URL=${redactedUrl(url)}. Start that Redis, or point REDIS_URL at one that runs.`,
    );
  }
  if (!onPath('redis-server')) {
    throw new UsageError(
      `Nothing answers at REDIS_URL=${redactedUrl(url)} and redis-server is not on the PATH.\n` +
        'Start a Redis (e.g. `docker run -p 6379:6379 redis:7`, or `apt-get install redis-server`), or point REDIS_URL at one.',
    );
  }
  const started = await startPrivateRedis({ url, dataDir: config.AGENTQ_DATA_DIR });
  options.onStarted(started.child);
  options.logger.info(
    `nothing answers at ${redactedUrl(url)}: started a private redis-server on loopback, with a generated password (in ${started.passwordFile}); data in ${dir}, append-only file on`,
  );
  return started.url;
}

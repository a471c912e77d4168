/**
 * A worker process: one BullMQ `Worker` per pool it serves, each running up to its pool's
 * concurrency. Start more processes (here or on other machines) to go faster; Redis is the only
 * shared state. Each process also sweeps expired tasks' data now and then.
 */
import { hostname } from 'node:os';
import path from 'node:path';
import { Worker } from 'bullmq';
import { loadTokenizer } from '@agentq/core';
import type { AgentPool } from '@agentq/contract';
import {
  concurrencyFor,
  installPrivatePaths,
  fallbackModelsFor,
  modelFor,
  modelLimits,
  modelOutageFor,
  redisTarget,
  taskWorkdir,
  toolProtocolFor,
  type Config,
} from '@agentq/config';
import { withFallbacks, type LanguageModel } from '@agentq/llm';
import {
  fireSchedules,
  jobBackoff,
  ModelOutages,
  SharedRateLimits,
  wakeWaiters,
  type AgentQueues,
} from '@agentq/scheduling';
import {
  connectRedis,
  compactEvents,
  expireTasks,
  FinishedJobs,
  onMessage,
  subscribe,
  removeLeftWorkdirs,
  HEARTBEAT_TTL_MS,
  warnIfEvicting,
  removeHeartbeat,
  settledWithin,
  closeConnection,
  sendHeartbeat,
  type TaskStore,
  watchRedis,
} from '@agentq/store';
import { composeInstall, expireApprovals, onChildFinished, Transitions, type Install } from '@agentq/tasks';
import {
  createLogger,
  createMetrics,
  serveMetrics,
  startTracing,
  TaskTelemetry,
  type Logger,
  type MetricsServer,
} from '@agentq/telemetry';
import { McpServers, removeWorkdir, resolveInterpreters, runsProcesses } from '@agentq/tools';
import { agentBuiltinTools } from './agent-tools.js';
import { workerServerHomes } from './agent-mcp-servers.js';
import { CancelListener } from './cancel-listener.js';
import { modelCatalog } from './model-catalog.js';
import { processorFor } from './job-handlers.js';
import { CellSlots } from './cell-slots.js';
import { CellWorker } from './cell-worker.js';
import { placingFolderOf } from './place-inputs.js';
import { throttledLog } from './throttled-log.js';
import { startWebhookSender } from './webhook-sender.js';
import { closeIsolations, isolationForPools, redisAddresses, type PoolTools } from './tool-isolation.js';

export interface StartWorkerOptions {
  config: Config;
  pools: readonly AgentPool[];
  /** Default: the OpenAI-compatible endpoint of the config, with each pool's model. */
  model?: LanguageModel;
  /** Jobs at once per pool. Default: each pool's concurrency setting. */
  concurrency?: number;
  /** How often expired tasks are swept (each sweep runs until nothing is due). Default 10000 ms. */
  sweepIntervalMs?: number;
  /** How often ended tasks' events are compacted (each pass runs until none is left). Default 1000 ms. */
  compactIntervalMs?: number;
  /**
   * How often it admits what waits for its pools though none of its jobs ended, and recovers what a
   * dead process popped (fair-admission.ts). Default 1000 ms.
   */
  admitIntervalMs?: number;
  /**
   * On `close`, how long running jobs may take to finish before they are interrupted and put back in
   * the queue for another worker. Default AGENTQ_SHUTDOWN_GRACE_MS (10000 ms).
   */
  shutdownGraceMs?: number;
  /** Default: JSON lines on stdout, as the config says (AGENTQ_LOG_LEVEL, AGENTQ_LOG_FORMAT). */
  logger?: Logger;
}

export interface WorkerHandle {
  id: string;
  /** How each pool's process tools run (for the start-up log). */
  tools: ReadonlyMap<AgentPool, PoolTools>;
  logger: Logger;
  /** What it built from the configuration (composeInstall): the install's keys, store, queues and services. */
  install: Install;
  /** Where its Prometheus metrics are served (AGENTQ_METRICS_PORT), if anywhere. */
  metricsUrl?: string;
  /** Stops taking jobs, waits for the running ones, and disconnects. */
  close(): Promise<void>;
}

/** Ended tasks compacted per claim. */
const COMPACT_BATCH = 200;
/** On close, how long one request to Redis may take: an answer takes milliseconds; Redis away, forever. */
const REDIS_WAIT_MS = 1_000;
/** On close, how long the running tasks may take to be handed back, once interrupted. */
const HAND_BACK_WAIT_MS = 5_000;

export async function startWorker(options: StartWorkerOptions): Promise<WorkerHandle> {
  const { config } = options;
  // Once, at start (a version manager's python3 shim costs 100+ ms a call); only where a pool runs them.
  if (options.pools.some((pool) => runsProcesses(agentBuiltinTools(config, pool)))) resolveInterpreters();
  const serviceAddresses = await redisAddresses(config.REDIS_URL);
  const poolTools = await isolationForPools({ config, pools: options.pools, serviceAddresses });
  // BullMQ's connection, and agentq's own, whose commands from many jobs go out together.
  const redis = connectRedis({ ...redisTarget(config), name: 'agentq-worker' });
  const data = connectRedis({ ...redisTarget(config), name: 'agentq-worker-data', pipelined: true });
  const connection = watchRedis(redis, { label: 'agentq worker', log: (line) => logger.warn(line) });
  // Its connection's errors are the same Redis's, said once by watchRedis; a failed call fails where it is made.
  data.on('error', () => undefined);
  const subscriber = connectRedis({ ...redisTarget(config), name: 'agentq-worker-cancel', subscriber: true });
  // Its connection's errors are the same Redis's, said once by watchRedis; it subscribes again on reconnect.
  subscriber.on('error', () => undefined);
  const workerId = `${hostname()}:${process.pid}`;
  const logger =
    options.logger ??
    createLogger({
      name: 'agentq-worker',
      level: config.AGENTQ_LOG_LEVEL,
      format: config.AGENTQ_LOG_FORMAT,
      base: { worker: workerId, pools: options.pools.join(',') },
    });
  // Said at start (once Redis answers), as an error: a Redis that evicts keys loses tasks without a trace.
  void warnIfEvicting(data, (line) => logger.error(line));
  const metrics = createMetrics();
  const tracing = startTracing({
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    serviceName: config.OTEL_SERVICE_NAME ?? 'agentq-worker',
  });
  const toolNames = new Set(options.pools.flatMap((pool) => agentBuiltinTools(config, pool).map((tool) => tool.name)));
  const telemetry = new TaskTelemetry({ logger, metrics, tracing, toolNames });
  // Built as the API builds them (its data checked and migrated first); BullMQ's calls on their own connection.
  const install = await composeInstall({ config, data, queueConnection: redis, logger });
  const { keys, store, queues, schedules } = install;
  // Webhooks: sent by every worker; a status change here that may have added one is looked at at once.
  const webhooks = startWebhookSender({
    deliveries: install.deliveries,
    store,
    secretOf: (tenant) => install.settings.webhookOf(tenant).secret,
    schedule: config.AGENTQ_WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: config.AGENTQ_WEBHOOK_TIMEOUT,
    allowPrivate: config.AGENTQ_WEBHOOK_ALLOW_PRIVATE,
    serviceAddresses,
    logger,
    metrics,
  });
  store.observe((commit) => {
    telemetry.observe(commit);
    if (commit.delivery) webhooks.nudge();
  });
  // Deliveries the API made (a cancel) or resent.
  onMessage(subscriber, (channel: string) => channel === keys.webhooksChannel && webhooks.nudge());
  store.onStaleWrite((taskId) => telemetry.staleWrite(taskId));
  const cancels = new CancelListener(subscriber, keys.cancelChannel);
  await cancels.start();
  await subscribe(subscriber, keys.webhooksChannel);
  const models = modelCatalog(config, new SharedRateLimits(data, keys), options.model);
  const outages = new ModelOutages(data, keys, {
    // One try may take the call's whole deadline; a moment more before another job takes over.
    leaseMs: config.AGENTQ_LLM_DEADLINE_MS + 5_000,
    maxBackoffMs: (model) => modelOutageFor(config, model).maxBackoffMs,
  });
  await outages.listen(subscriber);
  // Shared limits count every call's prompt: the tokenizer is loaded before the first job, not by it.
  if (Object.keys(modelLimits(config)).length) await loadTokenizer();

  const mcp = new McpServers({
    homeRoot: path.resolve(config.AGENTQ_DATA_DIR, 'mcp'),
    hidden: installPrivatePaths(config),
    allowPrivateNetwork: config.AGENTQ_FETCH_PRIVATE,
    serviceAddresses,
    timeoutMs: config.AGENTQ_TOOL_TIMEOUT_MS,
    outputLimit: config.AGENTQ_TOOL_OUTPUT_LIMIT,
    answerLimitBytes: config.AGENTQ_MCP_ANSWER_MB * 1024 * 1024,
    worker: workerId,
  });
  const transitions = new Transitions(store);
  const finishedJobs = new FinishedJobs(data, keys, (error) =>
    logger.warn({ err: error }, 'could not count finished jobs; counted again next second'),
  );
  // Schedules fire here (every worker takes firings): each submits its task through the task service,
  // so the tenant's limits and default webhook hold as for a submit. A tenant the file no longer has a key
  // of starts nothing: its schedules pause at their next firing, its tasks fail when a job of theirs is
  // taken (hold-task.ts), each saying why.
  const tenantPresent = install.settings.tenantActive;
  // Timers made what their records say: a process killed between writing one and the other left them apart.
  await schedules
    .reconcile()
    .then((seen) => logger.debug(seen, 'schedule timers reconciled with their records'))
    .catch((error: unknown) => logger.error({ err: error }, 'could not reconcile schedule timers with their records'));
  const scheduleFirings = fireSchedules({
    connection: redis,
    keys,
    fire: (firing) =>
      schedules
        .fire(firing)
        .catch((error: unknown) =>
          logger.error({ err: error, scheduleId: firing.scheduleId }, 'a schedule could not fire'),
        ),
    // Thrown again: BullMQ tries the timer again later.
    expireApprovals: async (taskId, step) => {
      const expired = await expireApprovals({ store, queues, taskId, step });
      if (expired) logger.info({ taskId, step, expired }, 'calls awaiting approval rejected: nobody decided in time');
    },
  });
  // Its errors are its connection's (watchRedis says those once); a firing that fails is logged above.
  scheduleFirings.on('error', () => undefined);
  // A BullMQ worker per pool in each cell (keys.ts), all a pool's sharing its concurrency (cell-slots.ts).
  const workers = new Map<AgentPool, Worker[]>();
  for (const pool of options.pools) {
    const concurrency = options.concurrency ?? concurrencyFor(config, pool);
    const slots = new CellSlots(concurrency, keys.cells.length);
    const context = {
      store,
      transitions,
      queues,
      // The pool's model, then its fallbacks in turn (a task that names its own model runs on that alone).
      model: withFallbacks([modelFor(config, pool) ?? 'default', ...fallbackModelsFor(config, pool)].map(models)),
      models,
      cancels,
      workerId,
      config,
      logger,
      telemetry,
      tracing,
      metrics,
      isolation: poolTools.get(pool)!.isolation,
      timers: install.timers,
      mcp,
      serviceAddresses,
      outages,
      wake: (members: readonly string[]) => wakeWaiters(queues, members),
      tenantPresent,
      offerTool: toolProtocolFor(config, pool) === 'native',
    };
    const processor = processorFor(pool, context);
    const cellWorkers = keys.cells.map(
      (cell, index) =>
        new CellWorker(
          pool,
          slots.wrap(processor, index),
          {
            connection: redis,
            prefix: cell.bullPrefix,
            concurrency,
            ...lockTiming(config.AGENTQ_JOB_LOCK_MS),
            // A stall is usually a worker that died; the job resumes from its journal, so allow a few.
            maxStalledCount: 3,
            // A failed run's wait is its task's retry policy's (hold-task.ts throws RetryLater with it).
            settings: { backoffStrategy: jobBackoff },
          },
          slots.mayTakeFor(index),
        ),
    );
    slots.bound(cellWorkers);
    workers.set(pool, cellWorkers);
    for (const [cell, worker] of cellWorkers.entries()) {
      const admission = queues.cells[cell]!.admission;
      // While Redis is away every pool says so on every attempt: the connection's watcher says it once;
      // after it, a line every 10 s at most (lost locks are reported per job, and BullMQ recovers them).
      const report = throttledLog({ intervalMs: 10_000, write: (line) => logger.error({ pool }, line) });
      worker.on('error', (error) => connection.lost() || report(error.message));
      // A job BullMQ gave up on (retries used up, stalled too often) must not leave its task running.
      worker.on('failed', (job, error) => {
        if (!job) return;
        void job
          .getState()
          .then((state) => {
            if (state !== 'failed') return;
            finishedJobs.count(pool, 'failed');
            return failTask({
              store,
              transitions,
              queues,
              taskId: (job.data as { taskId?: string }).taskId,
              error,
              workerId,
            });
          })
          .catch((failure: unknown) =>
            logger.error({ pool, jobId: job.id, err: failure }, 'could not record the failure of a job'),
          );
      });
      // A slot freed: the next tenant's task, if any waits (fair-admission.ts), at most a cycle per 20 ms.
      // Asked whatever this worker saw last: an API's submit may have left tasks waiting since.
      const admit = () => {
        admission.admitSoon(pool).catch((error: unknown) => connection.lost() || report((error as Error).message));
      };
      worker.on('completed', () => {
        finishedJobs.count(pool, 'completed');
        admit();
      });
      worker.on('failed', admit);
    }
  }
  const everyWorker = [...workers.values()].flat();
  await Promise.all(everyWorker.map((worker) => worker.waitUntilReady()));

  // A task's folder, what a placement of its files cut short left beside it, and its servers' HOMEs.
  const removeTaskWorkdir = async (taskId: string) => {
    const workdir = taskWorkdir(config, taskId);
    await removeWorkdir(workdir);
    await removeWorkdir(placingFolderOf(workdir));
    await mcp.removeTaskHomes(taskId);
  };
  // Tasks past their retention, and the folders of tasks their owners deleted; and the HOMEs of servers of
  // tenants, agents or servers the configuration no longer names (none of Redis needed).
  const keptHomes = workerServerHomes(config);
  const sweep = () =>
    Promise.all([
      expireTasks({ store, onRemoved: removeTaskWorkdir })
        .then(() => removeLeftWorkdirs(store, removeTaskWorkdir))
        .catch((error: unknown) => logger.error({ err: error }, 'sweeping expired tasks failed')),
      mcp
        .removeWorkerHomes(keptHomes)
        .then(
          (removed) =>
            removed.length &&
            logger.info({ removed }, 'removed the HOMEs of MCP servers the configuration no longer names'),
        )
        .catch((error: unknown) => logger.error({ err: error }, "sweeping MCP servers' HOMEs failed")),
    ]);
  const sweeper = setInterval(sweep, options.sweepIntervalMs ?? 10_000);
  sweeper.unref();
  // Ended tasks' event streams, compacted in batches until none is left (one pass at a time).
  let compacting = false;
  const compact = async () => {
    if (compacting) return;
    compacting = true;
    try {
      while ((await compactEvents({ redis, keys, batchSize: COMPACT_BATCH })) === COMPACT_BATCH);
    } catch (error) {
      if (!connection.lost()) logger.error({ err: error }, "compacting ended tasks' events failed");
    } finally {
      compacting = false;
    }
  };
  const compactor = setInterval(() => void compact(), options.compactIntervalMs ?? 1_000);
  compactor.unref();
  // Each second (by default): what waits for admission and fits though no job ended here, and what a
  // process that died popped and never queued.
  const admitter = setInterval(() => {
    // And each concurrency key with waiting tasks: what a task's end did not let through (its process died).
    for (const { gate, admission } of queues.cells) {
      void gate
        .sweep()
        .catch(
          (error: unknown) => connection.lost() || logger.error({ err: error }, 'turning concurrency keys failed'),
        );
      for (const pool of options.pools) {
        void Promise.all([admission.admit(pool), admission.recover(pool, (ids) => store.leasedTasks(ids))]).catch(
          (error: unknown) => connection.lost() || logger.error({ pool, err: error }, 'admitting waiting tasks failed'),
        );
      }
    }
  }, options.admitIntervalMs ?? 1_000);
  admitter.unref();

  const identity = {
    id: workerId,
    host: hostname(),
    pid: process.pid,
    pools: [...options.pools],
    concurrency: Object.fromEntries(
      options.pools.map((pool) => [pool, options.concurrency ?? concurrencyFor(config, pool)]),
    ),
    isolation: Object.fromEntries(options.pools.map((pool) => [pool, poolTools.get(pool)!.summary])),
    startedAt: new Date().toISOString(),
  };
  const beat = () =>
    sendHeartbeat({ redis, keys, worker: identity }).catch((error: unknown) =>
      logger.error({ err: error }, 'heartbeat failed'),
    );
  await beat();
  const heartbeat = setInterval(beat, HEARTBEAT_TTL_MS / 3);
  heartbeat.unref();
  const metricsServer: MetricsServer | undefined =
    config.AGENTQ_METRICS_PORT !== undefined
      ? await serveMetrics({
          registry: metrics.registry,
          port: config.AGENTQ_METRICS_PORT,
          host: config.AGENTQ_METRICS_HOST,
        })
      : undefined;

  return {
    id: workerId,
    tools: poolTools,
    logger,
    install,
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    async close() {
      clearInterval(sweeper);
      clearInterval(compactor);
      clearInterval(admitter);
      clearInterval(heartbeat);
      const graceMs = options.shutdownGraceMs ?? config.AGENTQ_SHUTDOWN_GRACE_MS;
      logger.info({ graceMs }, 'stopping: no new jobs; running tasks may finish within the grace period');
      // What Redis is told from here on is waited for a moment at most, and not at all while it is away: a
      // connection holds a request until Redis is back, and the process must stop all the same. A running
      // task is then not handed back (a write): its job runs again on another worker once Redis is back
      // and its lock has run out, and resumes from its journal.
      const away = connection.lost();
      const waitMs = away ? 0 : REDIS_WAIT_MS;
      await settledWithin(removeHeartbeat({ redis, keys, id: workerId }), waitMs);
      const closed = Promise.all(everyWorker.map((worker) => worker.close()));
      const grace = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), away ? 0 : graceMs).unref());
      if ((await Promise.race([closed, grace])) === 'late') {
        if (!away)
          logger.warn({ running: cancels.count() }, 'grace period over: handing the running tasks back to the queue');
        cancels.interruptAll();
      }
      if (!(await settledWithin(closed, away ? 0 : HAND_BACK_WAIT_MS)) && cancels.count() > 0) {
        logger.warn(
          { running: cancels.count() },
          'Redis does not answer: the running tasks are not handed back; each runs again once Redis is back and its lock runs out',
        );
      }
      for (const { admission } of queues.cells) admission.stop();
      await settledWithin(Promise.all([webhooks.stop(), scheduleFirings.close(), finishedJobs.close()]), waitMs);
      await settledWithin(install.close(), waitMs);
      await Promise.all([
        closeConnection(redis, waitMs),
        closeConnection(data, waitMs),
        closeConnection(subscriber, waitMs),
        metricsServer?.close(),
        tracing.shutdown(),
        closeIsolations(poolTools),
        mcp.close(),
      ]);
      logger.info('stopped');
    },
  };
}

/**
 * BullMQ's lock settings for "a dead worker's job is running again within AGENTQ_JOB_LOCK_MS". A job
 * is taken back by the first stalled check after its lock expired; a lock expires at most
 * `lockDuration` after the last renewal. So: the lock lasts 0.7 of the setting and is renewed every
 * quarter of it, and every worker checks for stalled jobs every fifth (at least every 250 ms): 0.9 of
 * the setting at worst, and room for one check that comes late on a busy machine (seen: a 2 s setting
 * resumed after 2.5 s once, with a lock of 0.75 and a 500 ms floor). (BullMQ's defaults, lock = check
 * interval, renewed at half, make it up to twice the setting.)
 */
function lockTiming(lockMs: number): { lockDuration: number; lockRenewTime: number; stalledInterval: number } {
  const lockDuration = Math.round(lockMs * 0.7);
  return {
    lockDuration,
    lockRenewTime: Math.round(lockMs / 4),
    stalledInterval: Math.max(250, Math.round(lockMs / 5)),
  };
}

async function failTask(options: {
  store: TaskStore;
  transitions: Transitions;
  queues: AgentQueues;
  taskId: string | undefined;
  error: Error;
  workerId: string;
}): Promise<void> {
  const { store, taskId } = options;
  const record = taskId ? await store.getRecord(taskId) : undefined;
  if (!record) return;
  const failed = await options.transitions.fail(record, {
    from: ['queued', 'running'],
    worker: options.workerId,
    error: { code: 'error', message: options.error.message },
  });
  if (failed.applied) await onChildFinished({ store, queues: options.queues, taskId: record.id });
}

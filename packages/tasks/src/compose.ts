/**
 * The one place the API and every worker build what they share, from the loaded configuration: the
 * install's keys, its task store, the pools' queues, the task service, the schedules and the webhook
 * deliveries. Every value is the configuration's (its schema holds the defaults): nothing here has a
 * default of its own, so no process runs with a value the environment and the file did not give.
 *
 * @example
 * const install = await composeInstall({ config, data: redis, queueConnection: redis, logger });
 * await install.tasks.submit({ tenant: 'default', inputs: [{ prompt: 'hi', agent: 'casual' }], bytes: 40 });
 */
import {
  apiKeys,
  cellCount,
  commitDurability,
  ConfigError,
  fairOptions,
  keyPrefix,
  poolNames,
  tenantConcurrencyLimit,
  tenantMaxBytes,
  tenantRoom,
  tenantScheduleLimit,
  tenantSpendingLimits,
  tenantWebhook,
  type Config,
} from '@agentq/config';
import { closeQueues, createAgentQueues, ScheduleTimers, type AgentQueues } from '@agentq/scheduling';
import {
  cellsPerMaster,
  clusterSlotOwners,
  createKeys,
  migrateStorage,
  recordedCellCount,
  RedisMemory,
  ScheduleStore,
  TaskStore,
  WebhookDeliveries,
  type Keys,
  type RoomLimits,
  type StoreOptions,
} from '@agentq/store';
import type { Redis } from 'ioredis';
import { forkDiskQuota } from './fork-task.js';
import { ScheduleService, tenantHasKeys } from './schedule-service.js';
import { TaskService, type TaskServiceOptions } from './task-service.js';

/** What the configuration sets for the parts an install is made of: plain values, and per tenant. */
export interface InstallSettings {
  /** The prefix of every key (AGENTQ_REDIS_PREFIX; a hash tag on a Redis Cluster). */
  prefix: string;
  /**
   * How many cells its tasks are spread over (AGENTQ_CELLS); `recorded` (unset, on a Redis Cluster): the
   * count the install recorded, or a new install's spread over the masters (config's cellCount).
   */
  cells: number | 'recorded';
  /** On a Redis Cluster (REDIS_CLUSTER_NODES): whether its cells leave masters idle is said at start. */
  cluster: boolean;
  /** The task store's: retention, tenants' spending and byte limits, commit durability. */
  store: StoreOptions & { retentionMs: number };
  /** The pools' queues: every pool of the file, and fair admission's backlog and weights. */
  queues: { pools: string[]; fair: ReturnType<typeof fairOptions> };
  /** New work is refused past this share of Redis's maxmemory (AGENTQ_REDIS_FULL_PERCENT). */
  redisFullPercent: number;
  /** A task's disk quota (AGENTQ_TASK_DISK_MB), a fork held to it; undefined: none. */
  diskQuota: TaskServiceOptions['diskQuota'];
  /** A tenant's room: tasks not ended, stored, bytes written (its limits, else `*`'s). */
  room: (tenant: string) => RoomLimits;
  /** A tenant's default webhook and signing secret. */
  webhookOf: TaskServiceOptions['webhookOf'];
  /** A tenant's tasks with one concurrency key that run at once (limits.perConcurrencyKey). */
  concurrencyLimitOf: (tenant: string) => number;
  /** Schedules a tenant may hold (limits.schedules). */
  scheduleLimitOf: (tenant: string) => number;
  /** Whether a tenant is still in the file (a key names it): its schedules fire only then. */
  tenantActive: (tenant: string) => boolean;
}

/** The settings the configuration gives an install's parts. */
export function installSettings(config: Config): InstallSettings {
  const keys = apiKeys(config);
  return {
    prefix: keyPrefix(config),
    cells: cellCount(config),
    cluster: config.REDIS_CLUSTER_NODES !== undefined,
    store: {
      retentionMs: config.AGENTQ_RETENTION_HOURS * 3600 * 1000,
      tenantLimits: tenantSpendingLimits(config),
      durability: commitDurability(config),
      tenantMaxBytes: tenantMaxBytes(config),
    },
    queues: { pools: poolNames(config), fair: fairOptions(config) },
    redisFullPercent: config.AGENTQ_REDIS_FULL_PERCENT,
    diskQuota: forkDiskQuota(config.AGENTQ_TASK_DISK_MB),
    room: (tenant) => tenantRoom(config, tenant),
    webhookOf: (tenant) => tenantWebhook(config, tenant),
    concurrencyLimitOf: (tenant) => tenantConcurrencyLimit(config, tenant),
    scheduleLimitOf: (tenant) => tenantScheduleLimit(config, tenant),
    tenantActive: (tenant) => tenantHasKeys(keys, tenant),
  };
}

/** What an API or a worker process works with, built alike in both. */
export interface Install {
  settings: InstallSettings;
  keys: Keys;
  store: TaskStore;
  queues: AgentQueues;
  tasks: TaskService;
  schedules: ScheduleService;
  /** The schedules' timers (a BullMQ queue of job schedulers): a worker's firings read them. */
  timers: ScheduleTimers;
  deliveries: WebhookDeliveries;
  /** Closes the queues and the schedules' timers; the connections are the caller's. */
  close(): Promise<void>;
}

/**
 * Builds an install's parts from the configuration, once its data is known to be readable by this
 * code: the cell count checked and the storage migrated first (migrateStorage).
 */
export async function composeInstall(options: {
  config: Config;
  /** agentq's own commands: records, scripts, cancels (a worker's is auto-pipelined). */
  data: Redis;
  /** BullMQ's: the queues and the schedules' timers (never auto-pipelined: its blocking reads). */
  queueConnection: Redis;
  /** Where migrations say what they did. */
  logger: Parameters<typeof migrateStorage>[2];
}): Promise<Install> {
  const { data, queueConnection } = options;
  const settings = installSettings(options.config);
  const keys = createKeys(settings.prefix, await cellCountOf(data, settings, options.logger));
  await migrateStorage(data, keys, options.logger);
  const store = new TaskStore(data, keys, settings.store);
  const queues = createAgentQueues({ connection: queueConnection, keys, ...settings.queues });
  const tasks = new TaskService({
    store,
    queues,
    publisher: data,
    room: settings.room,
    redisMemory: new RedisMemory(data, settings.redisFullPercent),
    webhookOf: settings.webhookOf,
    diskQuota: settings.diskQuota,
    concurrencyLimitOf: settings.concurrencyLimitOf,
  });
  const timers = new ScheduleTimers({ connection: queueConnection, keys });
  const schedules = new ScheduleService({
    schedules: new ScheduleStore(data, keys),
    timers,
    tasks: store,
    tenantActive: settings.tenantActive,
    // A new schedule passes the gate a submit does, and its tenant's room and count; each firing submits
    // through the task service, so the tenant's limits and default webhook hold as for a submit.
    admission: tasks.admission,
    canSign: tasks.canSign,
    room: settings.room,
    maxSchedules: settings.scheduleLimitOf,
    submit: async (tenant, input, scheduleId) => {
      const [task] = await tasks.submit({ tenant, inputs: [input], bytes: JSON.stringify(input).length, scheduleId });
      return task!;
    },
  });
  return {
    settings,
    keys,
    store,
    queues,
    tasks,
    schedules,
    timers,
    deliveries: new WebhookDeliveries(data, keys),
    async close() {
      await Promise.all([closeQueues(queues), timers.close()]);
    },
  };
}

/**
 * The install's cell count: the configuration's, or (`recorded`) the one read from, or recorded in, the
 * Redis Cluster. Said in the log when a new install records its count, and on a cluster when the count
 * leaves masters without a cell (an install recorded with one cell: its count cannot change under its
 * tasks, and a move is the way out).
 */
async function cellCountOf(
  data: Redis,
  settings: InstallSettings,
  logger: Parameters<typeof migrateStorage>[2],
): Promise<number> {
  let cells: number;
  if (settings.cells === 'recorded') {
    const found = await recordedCellCount(data, settings.prefix).catch((error: unknown) => {
      throw new ConfigError(
        `AGENTQ_CELLS is not set, so this install's cell count is read from the Redis Cluster at start, and the cluster did not answer (${(error as Error).message}). Start it once the cluster answers, or set AGENTQ_CELLS to the install's count.`,
      );
    });
    cells = found.cells;
    if (found.recordedNow)
      logger.info(
        { cells },
        `a new install on a Redis Cluster: its tasks are spread over ${cells} cells, an even share of them on each master (recorded; AGENTQ_CELLS=${cells} says the same)`,
      );
  } else cells = settings.cells;
  if (!settings.cluster) return cells;
  // Only said: where the cluster cannot be read now, its commands fail soon enough, saying why.
  const owners = await clusterSlotOwners(data).catch(() => undefined);
  const idle = owners ? cellsPerMaster(settings.prefix, cells, owners).filter((held) => held === 0).length : 0;
  if (owners && idle > 0)
    logger.warn(
      { cells, masters: owners.size, idle },
      `this install's tasks are in ${cells} cell${cells === 1 ? '' : 's'}, and ${idle} of the Redis Cluster's ${owners.size} masters hold none: they carry none of its work. A cell count is fixed once tasks are stored; docs/operations.md, "Redis Cluster", says how to move to an install spread over every master.`,
    );
  return cells;
}

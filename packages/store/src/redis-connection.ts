/**
 * Redis connections. Workers' (BullMQ's blocking ones) wait out an outage: no per-command retry limit,
 * commands queued until Redis is back. The API's data connection fails fast instead: a request while
 * Redis is away is answered 503 at once, not held until a client gives up.
 */
import { Cluster, Redis } from 'ioredis';
import { defineScripts } from './lua-script.js';

/**
 * @param options.pipelined send the commands made in one turn of the event loop together (ioredis's
 * auto-pipelining): many jobs' writes in one round trip, one system call on each side. Not for the
 * connection BullMQ uses, whose blocking reads must not wait behind others.
 */
export function connectRedis(options: {
  url: string;
  sentinels?: Array<{ host: string; port: number }>;
  masterName?: string;
  clusterNodes?: Array<{ host: string; port: number }>;
  name?: string;
  failFast?: boolean;
  pipelined?: boolean;
  /** A connection that only listens (pub-sub.ts): on a cluster, one per node whose channels it follows. */
  subscriber?: boolean;
}): Redis {
  const settings = {
    ...(options.failFast
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5_000 }
      : { maxRetriesPerRequest: null }),
    ...(options.name ? { connectionName: options.name } : {}),
    ...(options.pipelined ? { enableAutoPipelining: true } : {}),
  };
  if (options.clusterNodes)
    return withScripts(
      connectCluster(options.clusterNodes, options.url, settings, options.subscriber === true),
      options.pipelined,
    );
  if (!options.sentinels) return withScripts(new Redis(options.url, settings), options.pipelined);
  // Through Sentinels: the primary they name, followed when they promote another (`failoverDetector`:
  // told at once, not at the next lost connection); REDIS_URL gives the credentials and database.
  const url = new URL(options.url);
  return withScripts(
    keepConnecting(
      new Redis({
        sentinels: options.sentinels,
        name: options.masterName ?? 'mymaster',
        failoverDetector: true,
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
        ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
        ...settings,
      }),
    ),
    options.pipelined,
  );
}

/**
 * A Redis Cluster, from some of its nodes, with REDIS_URL's credentials and TLS (`rediss://`). Every
 * key agentq writes carries one hash tag (config's keyPrefix), so a script's keys, a pipeline's and a
 * BullMQ queue's are on one node. Typed as a `Redis`: a Cluster speaks the same commands, and this
 * code sends it only those that route by key (or none: PING, TIME, PUBLISH).
 */
function connectCluster(
  nodes: Array<{ host: string; port: number }>,
  url: string,
  settings: { enableOfflineQueue?: boolean; enableAutoPipelining?: boolean } & Record<string, unknown>,
  subscriber: boolean,
): Redis {
  const parsed = new URL(url);
  const { enableOfflineQueue, enableAutoPipelining, maxRetriesPerRequest, ...redisOptions } = settings;
  // A connection that waits out an outage waits on the cluster, not on one node: a command a node that
  // died had taken fails at once (the node's connection retries nothing), and the cluster sends it
  // again once it knows the slot's new master, for up to 30 s (150 tries 200 ms apart; a replica takes
  // over in 2 or 3 s). With the nodes' retries unbounded, what a master had when it died waited for it
  // for ever, and its runs came back only when their job locks ran out: a failover mid-batch took 24
  // to 30 s to get through, now 6 to 7 s (tests/integration/redis-cluster-failover.test.ts).
  const waits = maxRetriesPerRequest === null;
  const cluster = new Cluster(nodes, {
    redisOptions: {
      ...redisOptions,
      maxRetriesPerRequest: waits ? 0 : (maxRetriesPerRequest as number),
      ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
      ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
      ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    },
    ...(enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
    ...(enableAutoPipelining ? { enableAutoPipelining: true } : {}),
    // Writes and reads go to the masters: a replica may lag a commit a run builds on.
    scaleReads: 'master',
    ...(waits
      ? { retryDelayOnFailover: 200, retryDelayOnClusterDown: 200, retryDelayOnTryAgain: 200, maxRedirections: 150 }
      : {}),
    ...(subscriber ? { shardedSubscribers: true } : {}),
  });
  return cluster as unknown as Redis;
}

/** An auto-pipelined connection gets every script before its first command (lua-script.ts, defineScripts). */
function withScripts(redis: Redis, pipelined: boolean | undefined): Redis {
  if (pipelined) defineScripts(redis);
  return redis;
}

/**
 * Connects again a connection that ioredis ended by itself. A Sentinel announcing the failover while
 * the connection is already reconnecting calls that reconnect off ("Connection is closed."), and
 * ioredis then ends the connection for good, with no retry: seen under load in
 * tests/hosts/failover.test.ts, where the API answered 503 for minutes after the promotion. A
 * connection this process closes (`quit`, `disconnect()`) stays closed. Its duplicates are kept too:
 * BullMQ makes its blocking reads' connections with `duplicate()`, and a worker whose blocking
 * connection ended would wait for jobs that never come.
 */
export function keepConnecting(redis: Redis, retryMs = 100): Redis {
  let closing = false;
  const quit = redis.quit.bind(redis);
  const disconnect = redis.disconnect.bind(redis);
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = ((...args: Parameters<Redis['duplicate']>) =>
    keepConnecting(duplicate(...args), retryMs)) as Redis['duplicate'];
  redis.quit = ((...args: Parameters<Redis['quit']>) => {
    closing = true;
    return quit(...args);
  }) as Redis['quit'];
  redis.disconnect = (reconnect?: boolean) => {
    if (!reconnect) closing = true;
    disconnect(reconnect);
  };
  redis.on('end', () => {
    if (closing) return;
    setTimeout(() => {
      // A connect that fails ends the connection again, and this handler tries once more.
      if (!closing && redis.status === 'end') redis.connect().catch(() => undefined);
    }, retryMs).unref();
  });
  return redis;
}

/**
 * Says once when a connection to Redis is lost and once when it is back (ioredis reconnects by
 * itself), instead of an error per attempt. `lost()` tells whether it is away now.
 */
export function watchRedis(
  redis: Redis,
  options: { label: string; log?: (line: string) => void },
): { lost(): boolean } {
  const log = options.log ?? ((line: string) => console.warn(line));
  let lost = false;
  redis.on('error', (error: Error) => {
    if (lost) return;
    lost = true;
    log(`[${options.label}] Redis connection lost (${error.message}); reconnecting`);
  });
  redis.on('ready', () => {
    if (!lost) return;
    lost = false;
    log(`[${options.label}] Redis connection back`);
  });
  return { lost: () => lost };
}

/**
 * Waits for `promise` to settle, `ms` at most; answers whether it did, and never fails. A shutdown's
 * requests to Redis go through it: a connection that waits out an outage holds them until Redis is back,
 * and a process told to stop must stop while Redis is away too.
 */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const settle = () => {
      clearTimeout(timer);
      resolve(true);
    };
    promise.then(settle, settle);
  });
}

/** QUIT, and a disconnect if Redis does not answer it within `waitMs` (away, or the connection closing). */
export async function closeConnection(connection: Redis, waitMs = 1_000): Promise<void> {
  await settledWithin(connection.quit(), waitMs);
  connection.disconnect();
}

/** Resolves when the connection is ready, or after `timeoutMs` whatever its state (true when ready). */
export function redisReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ready);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.once('ready', onReady);
  });
}

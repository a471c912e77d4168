/**
 * `agentq doctor`: what this machine and configuration give a deployment, checked for real: how each
 * pool's tools would be isolated (the jail is tried), whether Redis answers, asks for a password and
 * keeps every key (an evicting Redis loses tasks; one without a maxmemory, or that does not log its
 * writes to disk, is a warning), with the credentials `agentq start` uses, and whom the API serves (where
 * a running one listens). Exits 1 when a pool's tools would be refused, Redis does not answer (or wants
 * a password it is not given) or evicts keys, or the API would not start. A worker that is not root
 * runs every task's jail as its own uid: said, with what that gives up.
 */
import { apiKeys, isLoopbackHost, poolNames, type Config } from '@agentq/config';
import { closeIsolations, isolationForPools, redisAddresses } from '@agentq/worker';
import { runningApi } from '../api-address.js';
import { passwordFix, withStoredPassword } from '../private-redis.js';
import { probeRedis, probeRedisMemory } from '../redis-probe.js';
import { paint } from '../terminal.js';

export async function doctorCommand(config: Config, flags: { json?: boolean }): Promise<number> {
  const tools = await isolationForPools({
    config,
    pools: poolNames(config),
    serviceAddresses: await redisAddresses(config.REDIS_URL),
  });
  await closeIsolations(tools);
  // The credentials `agentq start` uses: REDIS_URL's, else its private Redis's stored password.
  let url = config.REDIS_URL;
  let answers = await probeRedis(url);
  const stored = answers === 'auth' ? withStoredPassword(url, config.AGENTQ_DATA_DIR) : undefined;
  if (stored && (await probeRedis(stored)) === 'ok') [url, answers] = [stored, 'ok'];
  const redisUrl = new URL(url);
  const { evicts, unbounded, unlogged } = answers === 'ok' ? await probeRedisMemory(url) : {};
  const redis = {
    url: `${redisUrl.protocol}//${redisUrl.host}`,
    answers,
    password: Boolean(redisUrl.password),
    ...(stored && answers === 'ok' ? { storedPassword: true } : {}),
    ...(evicts ? { evicts } : {}),
    ...(unbounded ? { unbounded } : {}),
    ...(unlogged ? { unlogged } : {}),
  };
  const api = await runningApi(config);
  const configured = apiKeys(config);
  const adminKeys = configured.filter((key) => key.admin).length;
  const keys = configured.length - adminKeys;
  const apiRefused = !isLoopbackHost(config.AGENTQ_HOST) && keys + adminKeys === 0 && !config.AGENTQ_ALLOW_NO_AUTH;
  const pools = poolNames(config).map((pool) => ({
    pool,
    ...tools.get(pool)!.summary,
    description: tools.get(pool)!.description,
  }));
  // Not root: one uid for every task's tools and servers (jail-identity.ts).
  const sharedUid = process.getuid?.() === 0 ? undefined : process.getuid?.();
  const jailed = pools.some((pool) => pool.kind === 'jail');
  const problems =
    pools.filter((pool) => pool.kind === 'unavailable').length +
    (apiRefused ? 1 : 0) +
    (evicts ? 1 : 0) +
    (answers === 'ok' ? 0 : 1);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ pools, ...(jailed && sharedUid !== undefined ? { sharedUid } : {}), redis, api: { host: config.AGENTQ_HOST, port: config.PORT, ...(api ? { listening: api.listening } : {}), keys, adminKeys, refused: apiRefused } })}\n`,
    );
    return problems ? 1 : 0;
  }
  const mark = (ok: boolean | 'warn') =>
    ok === true ? paint.green('ok  ') : ok === 'warn' ? paint.yellow('warn') : paint.red('FAIL');
  console.log('Tools, per pool:');
  for (const pool of pools) {
    const ok = pool.kind === 'jail' || pool.kind === 'not-needed' ? true : pool.kind === 'none' ? 'warn' : false;
    console.log(`  ${mark(ok)} ${pool.pool.padEnd(8)} ${pool.description}`);
  }
  if (jailed && sharedUid !== undefined)
    console.log(
      `  ${mark('warn')} not root: every task's tools and MCP servers run as uid ${sharedUid}, this worker's own, so only the jail's mounts keep a task from another task's folder (a task's code, or a server, that got out of its mounts would read every task's files); tasks share one process limit (the kernel counts per uid); no cgroup bounds a run's memory (per process only), and no egress network. Run the worker as root for a uid of its own per task.`,
    );
  console.log('Redis:');
  const redisOk = redis.answers === 'ok' ? (redis.password ? true : 'warn') : false;
  const redisNote =
    redis.answers === 'ok'
      ? redis.password
        ? `answers, with a password${redis.storedPassword ? ` (the private Redis's of \`agentq start\`, from ${config.AGENTQ_DATA_DIR}/redis/password)` : ''}`
        : `answers without a password: any program that reaches it${isLoopbackHost(redisUrl.hostname) ? ' on this machine' : ''} can read and change every task (jailed tools cannot reach it)`
      : redis.answers === 'auth'
        ? `wants a password that REDIS_URL does not give (NOAUTH): ${passwordFix(config.AGENTQ_DATA_DIR)}`
        : 'does not answer (`agentq start` starts a private one, with a password, when REDIS_URL is on loopback)';
  console.log(`  ${mark(redisOk)} ${redis.url} ${redisNote}`);
  if (evicts) console.log(`  ${mark(false)} ${evicts}`);
  if (unbounded)
    console.log(
      `  ${mark('warn')} Redis has no maxmemory: it grows until the machine runs out of memory, and new tasks are not refused before (AGENTQ_REDIS_FULL_PERCENT is a share of it). Set maxmemory to what the machine can give Redis.`,
    );
  if (unlogged)
    console.log(
      `  ${mark('warn')} Redis does not log its writes to disk (appendonly no): a restart of Redis loses every task and job written since its last snapshot, or all of them without snapshots. Set appendonly yes.`,
    );
  console.log('API:');
  const access =
    keys + adminKeys
      ? `${keys} tenant key(s), ${adminKeys} admin key(s)`
      : 'no keys: anyone who reaches it may submit tasks';
  const apiOk = apiRefused ? false : keys + adminKeys ? true : isLoopbackHost(config.AGENTQ_HOST) ? true : 'warn';
  const where = api
    ? `listens on ${api.listening} (pid ${api.pid})`
    : `would listen on ${config.AGENTQ_HOST}:${config.PORT} (none runs now)`;
  console.log(
    `  ${mark(apiOk)} ${where}; ${access}${apiRefused ? ' (it refuses to start so: give tenants keys in the configuration file)' : ''}`,
  );
  return problems ? 1 : 0;
}

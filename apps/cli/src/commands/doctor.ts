/**
 * `agentq doctor`: what this machine and configuration give a deployment, checked for real: how each
 * pool's tools would be isolated (the jail is tried), whether Redis answers, asks for a password and
 * keeps every key (an evicting Redis loses tasks; one without a maxmemory, or that does not log its
 * writes to disk, is a warning), and whom the API would serve. Exits 1 when a pool's tools would be
 * refused, Redis evicts keys, or the API would not start.
 */
import { AGENT_POOLS } from '@agentq/contract';
import { isLoopbackHost, type Config } from '@agentq/config';
import { closeIsolations, isolationForPools, redisAddresses } from '@agentq/worker';
import { probeRedis, probeRedisMemory } from '../redis-probe.js';
import { paint } from '../terminal.js';

export async function doctorCommand(config: Config, flags: { json?: boolean }): Promise<number> {
  const tools = await isolationForPools({ config, pools: AGENT_POOLS, serviceAddresses: await redisAddresses(config.REDIS_URL) });
  await closeIsolations(tools);
  const redisUrl = new URL(config.REDIS_URL);
  const answers = await probeRedis(config.REDIS_URL);
  const { evicts, unbounded, unlogged } = answers === 'ok' ? await probeRedisMemory(config.REDIS_URL) : {};
  const redis = { url: `${redisUrl.protocol}//${redisUrl.host}`, answers, password: Boolean(redisUrl.password), ...(evicts ? { evicts } : {}), ...(unbounded ? { unbounded } : {}), ...(unlogged ? { unlogged } : {}) };
  const keys = config.AGENTQ_API_KEYS?.length ?? 0;
  const adminKeys = config.AGENTQ_ADMIN_KEYS?.length ?? 0;
  const apiRefused = !isLoopbackHost(config.AGENTQ_HOST) && keys + adminKeys === 0 && !config.AGENTQ_ALLOW_NO_AUTH;
  const pools = AGENT_POOLS.map((pool) => ({ pool, ...tools.get(pool)!.summary, description: tools.get(pool)!.description }));
  const problems = pools.filter((pool) => pool.kind === 'unavailable').length + (apiRefused ? 1 : 0) + (evicts ? 1 : 0);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ pools, redis, api: { host: config.AGENTQ_HOST, port: config.PORT, keys, adminKeys, refused: apiRefused } })}\n`);
    return problems ? 1 : 0;
  }
  const mark = (ok: boolean | 'warn') => (ok === true ? paint.green('ok  ') : ok === 'warn' ? paint.yellow('warn') : paint.red('FAIL'));
  console.log('Tools, per pool:');
  for (const pool of pools) {
    const ok = pool.kind === 'jail' || pool.kind === 'not-needed' ? true : pool.kind === 'none' ? 'warn' : false;
    console.log(`  ${mark(ok)} ${pool.pool.padEnd(8)} ${pool.description}`);
  }
  console.log('Redis:');
  const redisOk = redis.answers === 'ok' ? (redis.password ? true : 'warn') : false;
  const redisNote =
    redis.answers === 'ok'
      ? redis.password
        ? 'answers, with a password'
        : `answers without a password: any program that reaches it${isLoopbackHost(redisUrl.hostname) ? ' on this machine' : ''} can read and change every task (jailed tools cannot reach it)`
      : redis.answers === 'auth'
        ? 'asks for a password that REDIS_URL does not give'
        : 'does not answer (`agentq start` starts a private one, with a password, when REDIS_URL is on loopback)';
  console.log(`  ${mark(redisOk)} ${redis.url} ${redisNote}`);
  if (evicts) console.log(`  ${mark(false)} ${evicts}`);
  if (unbounded) console.log(`  ${mark('warn')} Redis has no maxmemory: it grows until the machine runs out of memory, and new tasks are not refused before (AGENTQ_REDIS_FULL_PERCENT is a share of it). Set maxmemory to what the machine can give Redis.`);
  if (unlogged) console.log(`  ${mark('warn')} Redis does not log its writes to disk (appendonly no): a restart of Redis loses every task and job written since its last snapshot, or all of them without snapshots. Set appendonly yes.`);
  console.log('API:');
  const access = keys + adminKeys ? `${keys} tenant key(s), ${adminKeys} admin key(s)` : 'no keys: anyone who reaches it may submit tasks';
  const apiOk = apiRefused ? false : keys + adminKeys ? true : isLoopbackHost(config.AGENTQ_HOST) ? true : 'warn';
  console.log(`  ${mark(apiOk)} listens on ${config.AGENTQ_HOST}:${config.PORT}; ${access}${apiRefused ? ' (it refuses to start so: set AGENTQ_API_KEYS)' : ''}`);
  return problems ? 1 : 0;
}

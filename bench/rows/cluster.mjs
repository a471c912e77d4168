/**
 * B11: single-step tasks of 3 tenants (1,000 each; `--quick` 200) through one worker c=50, on a 3-master
 * Redis Cluster of the bench's own, the install in 3 cells (AGENTQ_CELLS: one a master), and, as the
 * reference, on one Redis in one cell: each master's share of the commands the cluster ran (every
 * command, those inside scripts included), and the commands per task on the cluster against one Redis.
 * Then, with valgrind, the same counted in instructions (counted-redis.mjs), on a cluster whose every
 * master runs under callgrind against one Redis that does (300 tasks a tenant; `--quick` 100).
 */
import { countUnfinished, createKeys } from '@agentq/store';
import { startAgentq, until } from '../lib/agentq.mjs';
import { tenantsEnv } from '../lib/config-file.mjs';
import { canCount, startCountedRedis } from '../lib/counted-redis.mjs';
import { startModel } from '../lib/model.mjs';
import { startRedisCluster } from '../lib/redis-cluster.mjs';

const TENANTS = ['acme', 'beta', 'gamma'];
/** The cluster's install's cells: one a master. */
const CELLS = 3;
/** Under callgrind a run takes 30 to 50 times as long, and so as many polls: fewer. */
const COUNTED_POLL_MS = 500;

export async function measureCluster({ redis, quick }) {
  const perTenant = quick ? 200 : 1_000;
  const model = await startModel({ script: 'single' });
  const cluster = await startRedisCluster({ masters: 3 });
  const clusterClient = cluster.connect();
  /** Every command each master ran for `work` (INFO commandstats before and after). */
  const commandsOf = (read) => async (work) => {
    const before = await read();
    await work();
    return (await read()).map((count, index) => count - before[index]);
  };
  try {
    const one = await run({
      model,
      perTenant,
      redisUrl: redis.url,
      client: redis.client,
      prefix: 'b11',
      measure: commandsOf(async () => [(await redis.usage()).calls]),
    });
    const many = await run({
      model,
      perTenant,
      redisUrl: 'redis://127.0.0.1:6379',
      env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: String(CELLS) },
      client: clusterClient,
      prefix: '{b11}',
      cells: CELLS,
      measure: commandsOf(() => cluster.commands()),
    });
    const total = many.reduce((sum, count) => sum + count, 0);
    const tasks = perTenant * TENANTS.length;
    return {
      tasks,
      shares: many.map((count) => count / total),
      perTask: { cluster: total / tasks, one: one[0] / tasks },
      instructions: canCount() ? await measureInstructions({ model, quick }) : undefined,
    };
  } finally {
    clusterClient.disconnect();
    cluster.stop();
    await model.stop();
  }
}

/**
 * Redis instructions per task on the counted cluster (each master's share too), on one counted Redis,
 * and on a counted cluster of one master (the install in one cell): what cluster mode costs apart from
 * spreading (Redis hashing each command's keys to their slots, scripts' calls too; the client sending
 * scripts one by one, ioredis's auto-pipelining being wrong for them on a cluster, lua-script.ts).
 * Under callgrind a run takes 30 to 50 times as long, so what an install does each second whatever it
 * runs (admission and lease turns, sweeps, heartbeats, the cluster's gossip) would weigh 30 to 50
 * times what it weighs in a run at full speed: its rate, counted over 5 idle seconds just before, is
 * taken out of the run's count (both are printed).
 */
async function measureInstructions({ model, quick }) {
  const perTenant = quick ? 100 : 300;
  const tasks = perTenant * TENANTS.length;
  const counted = (count) => async (work) => {
    const idle = await count(() => new Promise((resolve) => setTimeout(resolve, 5_000)));
    const startedAt = performance.now();
    const busy = await count(work);
    const ms = performance.now() - startedAt;
    const idleRate = (idle.total ?? idle) / 5_000;
    return {
      each: busy.each ?? [busy],
      total: busy.total ?? busy,
      withoutIdle: (busy.total ?? busy) - idleRate * ms,
    };
  };
  const single = await startCountedRedis();
  let one;
  try {
    one = await run({
      model,
      perTenant,
      redisUrl: single.url,
      client: single.client,
      prefix: 'b11c',
      measure: counted(single.count),
      pollMs: COUNTED_POLL_MS,
    });
  } finally {
    await single.stop();
  }
  const onCluster = async (masters) => {
    const cluster = await startRedisCluster({ masters, counted: true });
    const client = cluster.connect();
    try {
      return await run({
        model,
        perTenant,
        redisUrl: 'redis://127.0.0.1:6379',
        env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: String(masters) },
        client,
        prefix: `{b11c${masters}}`,
        cells: masters,
        measure: counted(cluster.count),
        pollMs: COUNTED_POLL_MS,
      });
    } finally {
      client.disconnect();
      await cluster.stop();
    }
  };
  const many = await onCluster(CELLS);
  const oneMaster = await onCluster(1);
  const perTask = (figure) => ({ all: figure.total / tasks, withoutIdle: figure.withoutIdle / tasks });
  return {
    tasks,
    shares: many.each.map((count) => count / many.total),
    perTask: { cluster: perTask(many), one: perTask(one), oneMaster: perTask(oneMaster) },
  };
}

async function run({ model, perTenant, redisUrl, env = {}, client, prefix, measure, cells = 1, pollMs = 100 }) {
  const agentq = await startAgentq({
    redisUrl,
    modelURL: model.baseURL,
    prefix: prefix.replace(/[{}]/g, ''),
    pools: 'casual',
    concurrency: 50,
    env: { ...env, ...tenantsEnv(Object.fromEntries(TENANTS.map((tenant) => [tenant, { keys: [`key-${tenant}`] }]))) },
  });
  const cellKeys = createKeys(prefix, cells).cells;
  const lists = TENANTS.flatMap((tenant) => cellKeys.map((cell) => cell.tenantTasks(tenant)));
  // Polled as cheaply as can be, one ZCOUNT a list: the polls are counted too, and there are a list per
  // tenant and cell, so a costlier poll would weigh more on the cells' side.
  const unfinished = async () =>
    (await Promise.all(lists.map((list) => countUnfinished(client, list)))).reduce((sum, count) => sum + count, 0);
  try {
    const batch = async (count, label) => {
      await Promise.all(
        TENANTS.map((tenant) =>
          agentq.submit(
            Array.from({ length: count }, (_, index) => ({ prompt: `${label} ${tenant} ${index}`, agent: 'casual' })),
            `key-${tenant}`,
          ),
        ),
      );
      await until(async () => -(await unfinished()), 0, pollMs);
    };
    await batch(50, 'warm-up');
    return await measure(() => batch(perTenant, 'measured'));
  } finally {
    await agentq.stop();
  }
}

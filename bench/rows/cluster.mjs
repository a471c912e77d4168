/**
 * B11: single-step tasks of 3 tenants (1,000 each; `--quick` 200) through one worker c=50, on a 3-master
 * Redis Cluster of the bench's own, the install in 3 cells (AGENTQ_CELLS: one a master), and, as the
 * reference, on one Redis in one cell: each master's share of the
 * commands the cluster ran (every command, those inside scripts included), and the commands per task on
 * the cluster against one Redis.
 */
import { countByStatus, createKeys } from '@agentq/store';
import { startAgentq, until } from '../lib/agentq.mjs';
import { tenantsEnv } from '../lib/config-file.mjs';
import { startModel } from '../lib/model.mjs';
import { startRedisCluster } from '../lib/redis-cluster.mjs';

const TENANTS = ['acme', 'beta', 'gamma'];
/** The cluster's install's cells: one a master. */
const CELLS = 3;

export async function measureCluster({ redis, quick }) {
  const perTenant = quick ? 200 : 1_000;
  const model = await startModel({ script: 'single' });
  const cluster = await startRedisCluster({ masters: 3 });
  const clusterClient = cluster.connect();
  try {
    const one = await run({
      model,
      perTenant,
      redisUrl: redis.url,
      client: redis.client,
      prefix: 'b11',
      commands: async () => [(await redis.usage()).calls],
    });
    const many = await run({
      model,
      perTenant,
      redisUrl: 'redis://127.0.0.1:6379',
      env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: String(CELLS) },
      client: clusterClient,
      prefix: '{b11}',
      cells: CELLS,
      commands: () => cluster.commands(),
    });
    const total = many.byMaster.reduce((sum, count) => sum + count, 0);
    return {
      tasks: perTenant * TENANTS.length,
      shares: many.byMaster.map((count) => count / total),
      perTask: { cluster: total / (perTenant * TENANTS.length), one: one.byMaster[0] / (perTenant * TENANTS.length) },
    };
  } finally {
    clusterClient.disconnect();
    cluster.stop();
    await model.stop();
  }
}

async function run({ model, perTenant, redisUrl, env = {}, client, prefix, commands, cells = 1 }) {
  const agentq = await startAgentq({
    redisUrl,
    modelURL: model.baseURL,
    prefix: prefix.replace(/[{}]/g, ''),
    pools: 'casual',
    concurrency: 50,
    env: { ...env, ...tenantsEnv(Object.fromEntries(TENANTS.map((tenant) => [tenant, { keys: [`key-${tenant}`] }]))) },
  });
  const keys = createKeys(prefix, cells);
  const ended = async () => {
    const { completed, failed } = await countByStatus(
      client,
      TENANTS.flatMap((tenant) => keys.cells.map((cell) => cell.tenantTasks(tenant))),
    );
    return completed + failed;
  };
  try {
    const batch = async (count, label) => {
      const before = await ended();
      await Promise.all(
        TENANTS.map((tenant) =>
          agentq.submit(
            Array.from({ length: count }, (_, index) => ({ prompt: `${label} ${tenant} ${index}`, agent: 'casual' })),
            `key-${tenant}`,
          ),
        ),
      );
      await until(ended, before + count * TENANTS.length, 100);
    };
    await batch(50, 'warm-up');
    const before = await commands();
    await batch(perTenant, 'measured');
    const after = await commands();
    return { byMaster: after.map((count, index) => count - before[index]) };
  } finally {
    await agentq.stop();
  }
}

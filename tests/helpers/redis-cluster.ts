/**
 * A Redis Cluster of a test's own: `masters` redis-servers in cluster mode on free ports (nothing kept
 * on disk but each node's cluster file, in a folder of its own), each given an even share of the 16,384
 * slots (master i has slots i/n to (i+1)/n of them), and `replicasEach` replicas per master when asked.
 * Resolves once every node says the cluster is ok and every replica has synced with its master. `REDIS_CLUSTER_NODES` for agentq is `nodes`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitForRedis } from '../setup/redis-server.js';

const SLOTS = 16_384;

export interface TestCluster {
  /** `host:port` of every master, then every replica. */
  nodes: string;
  masters: Array<{ port: number; server: ChildProcess }>;
  replicas: Array<{ port: number; server: ChildProcess; of: number }>;
  /** Commands each master ran so far (INFO stats' total_commands_processed), by port. */
  commandsByMaster(): Promise<Map<number, number>>;
  stop(): Promise<void>;
}

export async function startRedisCluster(
  options: { masters?: number; replicasEach?: number } = {},
): Promise<TestCluster> {
  const masterCount = options.masters ?? 3;
  const dir = await mkdtemp(path.join(tmpdir(), 'agentq-cluster-'));
  const start = async () => {
    const port = await freePort();
    const server = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '1000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    await waitForRedis(`redis://127.0.0.1:${port}`);
    return { port, server };
  };
  const masters = await Promise.all(Array.from({ length: masterCount }, start));
  const replicaPorts = await Promise.all(Array.from({ length: masterCount * (options.replicasEach ?? 0) }, start));
  const every = [...masters, ...replicaPorts];
  const clients = every.map(({ port }) => new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 }));
  // A node a test kills is not this helper's concern.
  for (const client of clients) client.on('error', () => undefined);
  try {
    // Every node meets the first; each master takes an even range of slots.
    await Promise.all(
      clients.slice(1).map((client) => client.call('CLUSTER', 'MEET', '127.0.0.1', String(masters[0]!.port))),
    );
    await Promise.all(
      masters.map((_, index) => {
        const from = Math.floor((index * SLOTS) / masterCount);
        const to = Math.floor(((index + 1) * SLOTS) / masterCount) - 1;
        return clients[index]!.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
      }),
    );
    const ids = await Promise.all(
      masters.map((_, index) => clients[index]!.call('CLUSTER', 'MYID') as Promise<string>),
    );
    const replicas = replicaPorts.map((replica, index) => ({ ...replica, of: masters[index % masterCount]!.port }));
    // A replica is told whose once it knows that master (the meeting takes a moment to spread).
    for (let index = 0; index < replicas.length; index++) {
      const client = clients[masterCount + index]!;
      const master = ids[index % masterCount]!;
      await until(async () => ((await client.call('CLUSTER', 'NODES')) as string).includes(master));
      await client.call('CLUSTER', 'REPLICATE', master);
    }
    await until(async () =>
      (await Promise.all(clients.map((client) => client.call('CLUSTER', 'INFO') as Promise<string>))).every((info) =>
        info.includes('cluster_state:ok'),
      ),
    );
    // A replica that never synced would not take over (its data would be too old to be trusted).
    await until(async () =>
      (await Promise.all(clients.slice(masterCount).map((client) => client.info('replication')))).every((info) =>
        info.includes('master_link_status:up'),
      ),
    );
    return {
      nodes: every.map(({ port }) => `127.0.0.1:${port}`).join(','),
      masters,
      replicas,
      async commandsByMaster() {
        const counts = new Map<number, number>();
        for (const [index, { port }] of masters.entries()) {
          const info = (await clients[index]!.info('stats')) as string;
          counts.set(port, Number(/total_commands_processed:(\d+)/.exec(info)![1]));
        }
        return counts;
      },
      async stop() {
        for (const client of clients) client.disconnect();
        for (const { server } of every) server.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const client of clients) client.disconnect();
    for (const { server } of every) server.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error('The test cluster did not come up in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

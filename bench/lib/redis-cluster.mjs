/**
 * A Redis Cluster of the benchmark's own: 3 masters on free ports, each given a third of the slots
 * (nothing kept on disk but each node's cluster file, in a folder of its own). `nodes` is what agentq's
 * REDIS_CLUSTER_NODES takes. `counted`: each node runs under callgrind (counted-redis.mjs), and
 * `count(work)` answers the instructions each ran for `work`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { countInstructions, startCountedServer } from './counted-redis.mjs';
import { connectWhenUp, freePort } from './private-redis.mjs';

const SLOTS = 16_384;

export async function startRedisCluster({ masters = 3, counted = false } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-cluster-'));
  const servers = [];
  const clients = [];
  const stop = async () => {
    for (const client of clients) client.disconnect();
    await Promise.all(servers.map((server) => (counted ? server.stop() : server.kill('SIGKILL'))));
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  for (let index = 0; index < masters; index++) {
    // (its address said: a node that met no other knows none, and would answer CLUSTER SLOTS without it)
    const clusterArgs = (port) => [
      '--cluster-announce-ip',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      path.join(dir, `nodes-${port}.conf`),
      '--dir',
      dir,
    ];
    let port;
    if (counted) {
      // (its port is picked as it starts: its cluster file is named by its place)
      const server = await startCountedServer(clusterArgs('counted-' + index));
      port = server.port;
      servers.push(server);
    } else {
      port = await freePort();
      // prettier-ignore
      servers.push(spawn('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...clusterArgs(port),
      ], { stdio: 'ignore' }));
    }
    const client = await connectWhenUp(`redis://127.0.0.1:${port}`, { everyMs: counted ? 100 : 50, tries: 200 });
    client.port = port;
    clients.push(client);
  }
  await Promise.all(
    clients.slice(1).map((client) => client.call('CLUSTER', 'MEET', '127.0.0.1', String(clients[0].port))),
  );
  await Promise.all(
    clients.map((client, index) =>
      client.call(
        'CLUSTER',
        'ADDSLOTSRANGE',
        String(Math.floor((index * SLOTS) / masters)),
        String(Math.floor(((index + 1) * SLOTS) / masters) - 1),
      ),
    ),
  );
  for (;;) {
    const infos = await Promise.all(clients.map((client) => client.call('CLUSTER', 'INFO')));
    if (infos.every((info) => info.includes('cluster_state:ok'))) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    nodes: clients.map((client) => `127.0.0.1:${client.port}`).join(','),
    /** Per master, every command it ran so far (those inside scripts included: INFO commandstats). */
    async commands() {
      const counts = [];
      for (const client of clients) {
        const stats = await client.info('commandstats');
        counts.push(
          [...stats.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0),
        );
      }
      return counts;
    },
    /** With `counted`: the instructions each master ran while `work()` ran, and their sum. */
    count: (work) =>
      countInstructions(
        servers.map((server, index) => ({ server, client: clients[index] })),
        work,
      ),
    /** A client of the whole cluster (ioredis's Cluster). */
    connect: () => new Redis.Cluster(clients.map((client) => ({ host: '127.0.0.1', port: client.port }))),
    stop,
  };
}

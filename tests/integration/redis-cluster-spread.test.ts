/**
 * A Redis Cluster install started without AGENTQ_CELLS (a real 3-master cluster of this test's own, the
 * API and a worker in this process). A new install's first start records a cell count that spreads
 * over the masters (one cell a master here), every process reads it back, and a batch's commands are
 * shared: no master runs half of them (with one cell, one master ran 99.9% of 3,000 tasks'). An install
 * that recorded its count keeps it, whatever the cluster: its tasks' keys are in their cells; its start
 * says that its cells leave masters idle, and how to spread it.
 */
import { Writable } from 'node:stream';
import { Cluster } from 'ioredis';
import { startApi } from '@agentq/api';
import { loadConfig } from '@agentq/config';
import { STORAGE_VERSION } from '@agentq/store';
import { createLogger } from '@agentq/telemetry';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { waitForEnd } from '../helpers/sse.js';
import { startStack } from '../helpers/stack.js';
import { freshPrefix } from '../helpers/redis.js';
import { freePort } from '../setup/redis-server.js';

let cluster: TestCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  client = new Cluster([{ host: '127.0.0.1', port: cluster.masters[0]!.port }]);
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

type Line = Record<string, unknown> & { msg: string; level: string };

function capture(): { logger: ReturnType<typeof createLogger>; lines: Line[] } {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Line);
      done();
    },
  });
  return { logger: createLogger({ name: 'agentq-test', level: 'info', format: 'json', destination }), lines };
}

it('spreads a new install over the masters: no master runs half of a batch’s commands', async () => {
  const prefix = freshPrefix('spread');
  const stack = await startStack({
    pools: ['casual'],
    env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_REDIS_PREFIX: prefix },
    rules: [{ reply: { content: 'done' } }],
  });
  try {
    // One cell a master, in the API and the worker alike, as the first start recorded it.
    expect(stack.api.install.keys.cells.length).toBe(3);
    expect(stack.worker!.install.keys.cells.map((cell) => cell.cellPrefix)).toEqual(
      stack.api.install.keys.cells.map((cell) => cell.cellPrefix),
    );
    expect(await client.get(`{${prefix}}:cells`)).toBe('3');

    const before = await cluster.commandsByMaster();
    const ids = await stack.submit(
      Array.from({ length: 300 }, (_, index) => ({ prompt: `hi ${index}`, agent: 'casual' })),
    );
    await Promise.all(ids.map((id) => waitForEnd(stack.api.url, id)));
    const after = await cluster.commandsByMaster();
    const ran = [...after].map(([port, count]) => count - (before.get(port) ?? 0));
    const total = ran.reduce((sum, count) => sum + count, 0);
    const shares = ran.map((count) => count / total);
    console.log(
      `300 tasks, no AGENTQ_CELLS: the masters' shares of the commands ${shares.map((share) => `${(share * 100).toFixed(1)}%`).join(', ')}`,
    );
    expect(Math.max(...shares)).toBeLessThan(0.5);
  } finally {
    await stack.close();
  }
}, 180_000);

it.each([
  ['recorded one cell at its first start', (prefix: string) => client.set(`{${prefix}}:cells`, '1')],
  [
    'stored tasks before counts were recorded',
    (prefix: string) => client.set(`{${prefix}}:storage-version`, String(STORAGE_VERSION)),
  ],
])(
  'keeps one cell for an install that %s, and says which masters it leaves idle',
  async (_, install) => {
    const prefix = freshPrefix('kept');
    await install(prefix);
    const { logger, lines } = capture();
    const stack = await startStack({
      pools: [],
      logger,
      env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_REDIS_PREFIX: prefix },
    });
    try {
      // Its tasks' keys are where they were: one cell, as recorded (from now on, for the other too).
      expect(stack.api.install.keys.cells.length).toBe(1);
      expect(await client.get(`{${prefix}}:cells`)).toBe('1');
      expect(lines.filter((line) => line.level === 'warn').map((line) => line.msg)).toEqual([
        expect.stringMatching(
          /^this install's tasks are in 1 cell, and 2 of the Redis Cluster's 3 masters hold none: .* docs\/operations\.md, "Redis Cluster"/,
        ),
      ]);
    } finally {
      await stack.close();
    }
  },
  60_000,
);

it('refuses to start, saying what to set, when the cluster does not answer and AGENTQ_CELLS is unset', async () => {
  const config = loadConfig({
    env: { PORT: '0', REDIS_CLUSTER_NODES: `127.0.0.1:${await freePort()}`, AGENTQ_LOG_LEVEL: 'silent' },
  });
  await expect(startApi({ config })).rejects.toThrow(
    /^AGENTQ_CELLS is not set, so this install's cell count is read from the Redis Cluster at start, and the cluster did not answer .*set AGENTQ_CELLS to the install's count\.$/,
  );
}, 30_000);

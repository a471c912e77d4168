/**
 * A Redis Cluster master fails over mid-batch: 3 masters with two replicas each (after a failover the
 * promoted one still has one, so commits that wait for a replica go on), of this test's own; agentq
 * (the API and a worker in this process) on it through REDIS_CLUSTER_NODES, each commit held until a
 * replica has it (AGENTQ_COMMIT_REPLICAS=1: its WAIT goes in one pipeline with the commit, so to the
 * commit's own node). The master that holds agentq's cell (with 3 cells, one master a cell: the first
 * cell's) is killed (SIGKILL) while tasks run; its replica takes over, and every task completes with
 * every event, in order, none twice, within seconds.
 */
import type { TaskEvent, TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { keyPrefix } from '@agentq/config';
import { createKeys, keySlot } from '@agentq/store';
import { startRedisCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { startStack, type Stack } from '../helpers/stack.js';

let cluster: TestCluster | undefined;
let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  await cluster?.stop();
  stack = undefined;
  cluster = undefined;
});

const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A GET that waits out the failover (the API answers 503 while Redis is away). */
async function get<T>(url: string): Promise<T> {
  for (;;) {
    const response = await fetch(url, { headers: { accept: 'application/json' } }).catch(() => undefined);
    if (response?.status === 200) return (await response.json()) as T;
    await pause(100);
  }
}

it.each([1, 3])(
  'loses nothing when the master of a cell is killed mid-batch and its replica takes over (%i cells)',
  async (cells) => {
    cluster = await startRedisCluster({ masters: 3, replicasEach: 2 });
    stack = await startStack({
      pools: ['file'],
      env: {
        REDIS_CLUSTER_NODES: cluster.nodes,
        AGENTQ_COMMIT_REPLICAS: '1',
        AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS: '500',
        AGENTQ_CELLS: String(cells),
      },
      rules: [
        {
          match: (request) => toolResults(request) < 2,
          reply: (request) => ({
            toolCalls: [{ name: 'write_file', arguments: { path: `step-${toolResults(request)}.txt`, content: 'x' } }],
            delayMs: 100,
          }),
        },
        { reply: { content: 'three steps done', delayMs: 100 } },
      ],
    });
    // The master whose slots hold the first cell (its hash tag), as Redis says.
    const probe = new Redis(cluster.masters[0]!.port, '127.0.0.1');
    const tag = createKeys(keyPrefix(stack.config), cells).cells[0]!.cellPrefix;
    const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', tag));
    expect(slot).toBe(keySlot(tag));
    probe.disconnect();
    const owner = cluster.masters[Math.floor((slot * cluster.masters.length) / 16_384)]!;

    const ids = await stack.submit(
      Array.from({ length: 30 }, (_, index) => ({ prompt: `write three files ${index}`, agent: 'file' })),
    );
    // Mid-batch: some tasks have ended, most have not.
    const ended = async () =>
      (await Promise.all(ids.map((id) => get<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)))).filter(
        (task) => task.status === 'completed',
      ).length;
    while ((await ended()) < 3) await pause(50);
    owner.server.kill('SIGKILL');
    const killedAt = Date.now();

    const deadline = Date.now() + 90_000;
    while ((await ended()) < ids.length && Date.now() < deadline) await pause(250);
    console.log(
      `cluster failover (${cells} cells): all ${ids.length} tasks ended ${Date.now() - killedAt} ms after the master was killed`,
    );
    const views = await Promise.all(ids.map((id) => get<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)));
    expect(views.map((view) => view.status)).toEqual(ids.map(() => 'completed'));
    for (const id of ids) {
      const events = await get<TaskEvent[]>(`${stack.api.url}/v1/tasks/${id}/events`);
      // Every event once, in order: none lost with the master, none written twice by a run that resumed.
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.filter((event) => event.type === 'task.completed')).toHaveLength(1);
      expect(events.filter((event) => event.type === 'tool.result').length).toBeGreaterThanOrEqual(2);
    }
  },
  120_000,
);

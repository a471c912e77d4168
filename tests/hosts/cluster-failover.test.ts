/**
 * A Redis Cluster master fails over, on real network stacks: 3 masters with two replicas each, every
 * node on a host of its own, agentq's API and two workers on theirs (REDIS_CLUSTER_NODES). Each commit
 * waits for a replica (AGENTQ_COMMIT_REPLICAS=1: its WAIT goes to its own node, in one pipeline with it).
 * The master of agentq's cell (with 3 cells, one a master: the first cell's) is killed mid-batch: its
 * replica takes over, every process follows it without a restart, and every task completes with every
 * event once, in order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startAgentqHosts, type AgentqHosts } from './agentq-hosts.js';
import { unavailable } from './test-network.js';

const FULL = process.env.HOSTS_FULL === '1';
const TASKS = FULL ? 200 : 30;
const why = unavailable();
let hosts: AgentqHosts | undefined;
afterEach(async () => {
  await hosts?.stop();
  hosts = undefined;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(why)(`a Redis Cluster master failing over${why ? ` (skipped: ${why})` : ''}`, () => {
  it.each([1, 3])(
    "follows the cell's new master without a restart, and the batch completes, nothing lost (%i cells)",
    async (cells) => {
      hosts = await startAgentqHosts({
        cells,
        script: 'three-step',
        latencyMs: 200,
        concurrency: 4,
        cluster: true,
        env: { AGENTQ_COMMIT_REPLICAS: '1', AGENTQ_COMMIT_REPLICAS_TIMEOUT_MS: '500' },
      });
      for (const name of ['w1', 'w2']) await hosts.startWorker(name);
      const before = await hosts.cellMasterNow();
      const ids = (
        await hosts.call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', {
          tasks: Array.from({ length: TASKS }, (_, index) => ({ prompt: `cluster failover ${index}`, agent: 'coder' })),
        })
      ).body.tasks.map((task) => task.id);
      while ((await hosts.modelLog()).length < TASKS) await pause(50);
      const killedAt = Date.now();
      await hosts.killPrimary();
      let after = before;
      while ((after = await hosts.cellMasterNow()) === before || after === '') await pause(100);
      const promotedMs = Date.now() - killedAt;

      const statuses = await hosts.statusesOnceEnded(ids, 120_000);
      if (!statuses.every((status) => status === 'completed'))
        for (const [name, output] of Object.entries(hosts.outputs(262_144))) {
          const lines = output.split('\n').filter((line) => !line.includes('"msg":"request"'));
          console.log(`cluster failover: the end of ${name}'s output:\n${lines.slice(-60).join('\n')}`);
        }
      expect(statuses).toEqual(ids.map(() => 'completed'));
      const doneMs = Date.now() - killedAt;

      // Nothing lost with the master: every event once, in order; no step completed twice.
      const { gaps, repeatedSteps } = await hosts.losses(ids);
      console.log(
        `cluster failover (${cells} cells): ${TASKS} tasks; the cell's master ${before} killed, ${after} took over after ${promotedMs} ms; every task completed ${doneMs} ms after the kill; tasks whose events' seq repeats or skips: ${gaps}; tasks with a step completed twice: ${repeatedSteps}`,
      );
      expect(after).not.toBe(before);
      expect(gaps).toBe(0);
    },
    FULL ? 300_000 : 180_000,
  );
});

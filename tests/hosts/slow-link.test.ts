/**
 * A slow link, on real network stacks: a worker host reaches Redis through a host that delays every
 * packet's worth of data by 5, 20 or 50 ms each way (delay-proxy.mjs; the kernel here has no netem).
 * What a single-step task takes, from its submit to its end, against the same run through the proxy
 * with no delay: the latency the link adds, and how many round trips that is. Goal: at 20 ms, at most
 * 3 round trips beyond the model call. CI measures 0 and 20 ms; `HOSTS_FULL=1` (npm run hosts) all.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { startAgentqHosts, type AgentqHosts } from './agentq-hosts.js';
import { unavailable } from './test-network.js';

const FULL = process.env.HOSTS_FULL === '1';
const DELAYS = FULL ? [0, 5, 20, 50] : [0, 20];
const TASKS = FULL ? 15 : 6;
const why = unavailable();
let hosts: AgentqHosts | undefined;
afterAll(() => hosts?.stop());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe.skipIf(why)(`a slow link to Redis${why ? ` (skipped: ${why})` : ''}`, () => {
  it('adds a few round trips of the link to a single-step task, and loses nothing', async () => {
    hosts = await startAgentqHosts({ script: 'single', latencyMs: 0, concurrency: 4 });
    const taken = new Map<number, number>();
    for (const delay of DELAYS) {
      const redisUrl = await hosts.startSlowLink(`link${delay}`, delay);
      const worker = await hosts.startWorker(`w${delay}`, { redisUrl });
      const times: number[] = [];
      // One task at a time: each one's latency, not a queue's.
      for (let index = 0; index < TASKS + 1; index++) {
        const [id] = (await hosts.call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', { tasks: [{ prompt: `slow ${delay} ${index}`, agent: 'casual' }] })).body.tasks.map((task) => task.id);
        let events: TaskEvent[] = [];
        while ((events = (await hosts.call<TaskEvent[]>('GET', `/v1/tasks/${id}/events`)).body).at(-1)?.type !== 'task.completed') await pause(20);
        expect(events.map((event) => event.seq)).toEqual(events.map((_, position) => position + 1));
        // The first task warms the connections and scripts up. The end counts the last write's trip to
        // Redis (its event's time is when the worker sent it).
        if (index > 0) times.push(Date.parse(events.at(-1)!.ts) + delay - Date.parse(events[0]!.ts));
      }
      taken.set(delay, median(times));
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    const base = taken.get(0)!;
    const report = DELAYS.filter((delay) => delay > 0).map((delay) => {
      const added = taken.get(delay)! - base;
      return `${delay} ms each way: ${taken.get(delay)} ms a task, +${added} ms = ${(added / (2 * delay)).toFixed(1)} round trips`;
    });
    console.log(`slow link: single-step task, submit -> completed, median of ${TASKS}; through the proxy with no delay ${base} ms; ${report.join('; ')}`);
    for (const delay of DELAYS.filter((one) => one > 0)) {
      // The link adds round trips: at least one (the claim), and (measured 2.6-2.9) under 4, a margin
      // over the goal of 3 for this shared machine; a round trip more on a step's path fails here.
      expect(taken.get(delay)! - base).toBeGreaterThanOrEqual(2 * delay);
      if (delay >= 20) expect(taken.get(delay)! - base).toBeLessThan(4 * 2 * delay);
    }
  }, FULL ? 300_000 : 120_000);
});

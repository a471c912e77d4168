/**
 * A slow link, on real network stacks: a worker host reaches Redis through a host that delays every
 * chunk by 5, 20 or 50 ms each way (delay-proxy.mjs; the kernel here has no netem). What single-step
 * and three-step tasks take, from submit to end, against the same runs over loopback (a worker on the
 * Redis host) and through the proxy with no delay: the latency the link adds per task and per step, and
 * how many round trips that is. Goal: at 20 ms, a single-step task adds at most 3 round trips beyond
 * the model call. CI measures loopback, 0 and 20 ms; `HOSTS_FULL=1` (npm run hosts) all, with more tasks.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@agentq/contract';
import { startAgentqHosts, type AgentqHosts } from './agentq-hosts.js';
import { unavailable } from './test-network.js';

const FULL = process.env.HOSTS_FULL === '1';
const DELAYS = FULL ? [0, 5, 20, 50] : [0, 20];
const TASKS = FULL ? 15 : 5;
const why = unavailable();
let hosts: AgentqHosts | undefined;
afterAll(() => hosts?.stop());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Runs tasks of `prompt` one at a time (each one's latency, not a queue's): the median of submit -> its last write in Redis. */
async function timeTasks(hosts: AgentqHosts, prompt: string, delay: number): Promise<number> {
  const times: number[] = [];
  for (let index = 0; index < TASKS + 1; index++) {
    const [id] = (
      await hosts.call<{ tasks: Array<{ id: string }> }>('POST', '/v1/tasks', {
        tasks: [{ prompt: `${prompt} ${index}`, agent: 'coder' }],
      })
    ).body.tasks.map((task) => task.id);
    let events: TaskEvent[] = [];
    while (
      (events = (await hosts.call<TaskEvent[]>('GET', `/v1/tasks/${id}/events`)).body).at(-1)?.type !== 'task.completed'
    )
      await pause(20);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, position) => position + 1));
    // The first task warms the connections and scripts up. The end counts the last write's trip to
    // Redis (its event's time is when the worker sent it).
    if (index > 0) times.push(Date.parse(events.at(-1)!.ts) + delay - Date.parse(events[0]!.ts));
  }
  return median(times);
}

describe.skipIf(why)(`a slow link to Redis${why ? ` (skipped: ${why})` : ''}`, () => {
  it(
    'adds a few round trips of the link to each task and each step, and loses nothing',
    async () => {
      hosts = await startAgentqHosts({ script: 'mixed', latencyMs: 0, concurrency: 4 });
      const single = new Map<string, number>();
      const multi = new Map<string, number>();
      for (const link of ['loopback', ...DELAYS.map(String)]) {
        const delay = link === 'loopback' ? 0 : Number(link);
        const worker =
          link === 'loopback'
            ? await hosts.startWorker('local', { onRedisHost: true })
            : await hosts.startWorker(`w${delay}`, { redisUrl: await hosts.startSlowLink(`link${delay}`, delay) });
        single.set(link, await timeTasks(hosts, `single ${link}`, delay));
        multi.set(link, await timeTasks(hosts, `multi ${link}`, delay));
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.kill('SIGTERM');
        await exited;
      }
      const proxied = single.get('0')!;
      const report = DELAYS.filter((delay) => delay > 0).map((delay) => {
        const added = single.get(String(delay))! - proxied;
        const perStep = (multi.get(String(delay))! - multi.get('0')!) / 3;
        return `${delay} ms each way: a single-step task ${single.get(String(delay))} ms, +${added} ms = ${(added / (2 * delay)).toFixed(1)} round trips; a step of a three-step task +${perStep.toFixed(0)} ms = ${(perStep / (2 * delay)).toFixed(1)} round trips`;
      });
      console.log(
        `slow link: median of ${TASKS} each, submit -> last write; over loopback a single-step task ${single.get('loopback')} ms, a three-step one ${multi.get('loopback')} ms; through the proxy with no delay ${proxied} and ${multi.get('0')} ms; ${report.join('; ')}`,
      );
      for (const delay of DELAYS.filter((one) => one > 0)) {
        const added = single.get(String(delay))! - proxied;
        // The link adds round trips: at least one (the claim), and (measured 2.3-2.9) under 4, a margin over
        // the goal of 3 for this shared machine; a round trip more on a task's path fails here.
        expect(added).toBeGreaterThanOrEqual(2 * delay);
        if (delay >= 20) expect(added).toBeLessThan(4 * 2 * delay);
      }
    },
    FULL ? 400_000 : 180_000,
  );
});

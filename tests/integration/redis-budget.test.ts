/**
 * What a task costs Redis, counted, not timed: a regression that adds a round trip or a command to
 * every step fails here, on any machine. A Redis of the test's own (nobody else's commands in its
 * INFO commandstats), the API and a worker in this process, the wire double as the model.
 *
 * `run` = every command Redis ran, those inside scripts included; `sent` = commands the clients
 * sent (INFO stats' total_commands_processed), an upper bound of the round trips; `scripts` =
 * EVALSHA/EVAL calls (BullMQ's and ours).
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { startRedisServer } from '../setup/redis-server.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * The budgets, per task, all its Redis work included. Measured: a single step 51.25 run, 4.5 sent, 4.4
 * scripts; two steps 64.45, 6.6, 6.5 (the end reads the packed string to write it whole: one GET more
 * than an APPEND, which left twice its length allocated). Before the end commit took a task's earlier
 * events from its list and its create wrote them packed: 52.3, 4.5, 4.45 and 64.8 to 65.2, 6.85 to
 * 7.05, 6.6 to 6.8. What is sent varies with how a run's admission turns and empty
 * fetches fall, so two steps may send 7.5. Raise one only with a reason in the commit, and the
 * performance table (docs/performance.md) measured again.
 *
 * BullMQ's own share of a job is about 33 commands run and 3 scripts (add, fetch, finish; its jobs have
 * no priority and its worker no metrics, each of which cost 2 to 3 more). The record, its list, its
 * events and memory take about 18: create, claim, and the end, which adds the run's events to the
 * packed string the create began (run-events.ts), so an ended task costs no compaction and a
 * single-step task no list. Of them, an INCRBY per commit that appends messages or events adds what it
 * wrote to its tenant's count (tenant-bytes.ts): 1 for a single step, 3 for two steps and a tool. Fair
 * admission's share is well under 1: a submit's tasks join their lists in its CREATE call, one ZADD for
 * all, and are admitted in one script call, one ZPOPMIN for all.
 */
const BUDGET = {
  singleStep: { run: 52, sent: 5, scripts: 5 },
  // Two model calls and a write_file between them: the model's tool call, the tool's result (with the
  // call's start: a quick tool's goes out with it) and the second call's answer are 2 more commits.
  twoSteps: { run: 65, sent: 7.5, scripts: 7 },
};

let server: ChildProcess;
let url: string;
let counter: Redis;
beforeAll(async () => {
  ({ url, server } = await startRedisServer());
  counter = new Redis(url);
});
afterAll(async () => {
  counter.disconnect();
  server.kill('SIGKILL');
});

/**
 * Submits `count` tasks and waits until each ended, its BullMQ job is gone (removed on completion)
 * and its events were compacted (a worker does it within a second of the end): all a task costs.
 */
async function runTasks(stack: Stack, count: number, agent: string): Promise<string[]> {
  const ids = await stack.submit(
    Array.from({ length: count }, (_, index) => ({ prompt: `budget ${agent} ${index} ${Math.random()}`, agent })),
  );
  const prefix = stack.config.AGENTQ_REDIS_PREFIX;
  const jobKeys = ids.map((id) => `${prefix}:bull:${agent}:${id}`);
  const pause = () => new Promise((resolve) => setTimeout(resolve, 25));
  // Waits on Redis itself, with commands agentq never sends (TOUCH, ZMSCORE), left out of the counts.
  while ((await counter.touch(...jobKeys)) > 0) await pause();
  while ((await counter.zmscore(`${prefix}:tasks:to-compact`, ...ids)).some((score) => score !== null)) await pause();
  return ids;
}

async function expectCompleted(stack: Stack, ids: string[]): Promise<void> {
  const tasks = await Promise.all(
    ids.map((id) =>
      fetch(`${stack.api.url}/v1/tasks/${id}`).then((response) => response.json() as Promise<{ status: string }>),
    ),
  );
  expect(tasks.map((task) => task.status)).toEqual(ids.map(() => 'completed'));
}

/** Runs `count` tasks under MONITOR (after a warm-up) and counts what Redis was asked and ran for them. */
async function measure(stack: Stack, agent: string, count: number) {
  // Warm-up: scripts loaded, connections open, queues known.
  await expectCompleted(stack, await runTasks(stack, 5, agent));
  const monitor = await counter.monitor();
  const byCommand: Record<string, number> = {};
  let run = 0;
  let sent = 0;
  let scripts = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const name = args[0]!.toLowerCase();
    if (name === 'touch' || name === 'zmscore') return;
    run++;
    byCommand[name] = (byCommand[name] ?? 0) + 1;
    // A command a script ran is shown with the source "lua"; the rest were sent by a client.
    if (source !== 'lua') sent++;
    if (name === 'evalsha' || name === 'eval') scripts++;
  });
  const ids = await runTasks(stack, count, agent);
  // What MONITOR shows arrives in order: a PING after the last task comes after all of theirs.
  const pinged = new Promise<void>((resolve) =>
    monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toLowerCase() === 'ping' && resolve()),
  );
  await counter.ping();
  await pinged;
  monitor.disconnect();
  await expectCompleted(stack, ids);
  const perTask = { run: (run - 1) / count, sent: (sent - 1) / count, scripts: scripts / count };
  console.log(`redis budget, ${agent}: ${JSON.stringify(perTask)} per task; by command: ${JSON.stringify(byCommand)}`);
  return perTask;
}

describe('the Redis a task costs', () => {
  let stack: Stack | undefined;
  afterAll(async () => stack?.close());

  it('a single-step task stays within its budget of commands, round trips and script calls', async () => {
    stack = await startStack({ pools: ['casual'], env: { REDIS_URL: url }, rules: [{ reply: { content: 'done' } }] });
    const perTask = await measure(stack, 'casual', 40);
    expect(perTask.run).toBeLessThanOrEqual(BUDGET.singleStep.run);
    expect(perTask.sent).toBeLessThanOrEqual(BUDGET.singleStep.sent);
    expect(perTask.scripts).toBeLessThanOrEqual(BUDGET.singleStep.scripts);
    await stack.close();
    stack = undefined;
  });

  it('a task of two steps with a file tool between them stays within its budget', async () => {
    const toolResults = (request: DoubleRequest) =>
      request.messages.filter((message) => message.role === 'tool').length;
    stack = await startStack({
      pools: ['file'],
      env: { REDIS_URL: url },
      rules: [
        {
          match: (request: DoubleRequest) => toolResults(request) === 0,
          reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hello' } }] },
        },
        { reply: { content: 'written' } },
      ],
    });
    const perTask = await measure(stack, 'file', 40);
    expect(perTask.run).toBeLessThanOrEqual(BUDGET.twoSteps.run);
    expect(perTask.sent).toBeLessThanOrEqual(BUDGET.twoSteps.sent);
    expect(perTask.scripts).toBeLessThanOrEqual(BUDGET.twoSteps.scripts);
  });
});

/**
 * agentq on a Redis Cluster (REDIS_CLUSTER_NODES): a real 3-master cluster of this test's own, the API
 * and a worker in this process, the install in one cell (an install's layout from before cell counts
 * were recorded; redis-cluster-cells.test.ts runs three). A batch of single-step tasks, tasks with a file tool and a planned task
 * (its subtasks and its finish) runs to the end, each task's events replay whole, a cancel and the task
 * list work: no script, pipeline or BullMQ queue crosses slots (Redis would refuse it: CROSSSLOT).
 */
import type { TaskEvent, TaskView } from '@agentq/contract';
import type { DoubleRequest } from '@agentq/llm';
import { keyPrefix, loadConfig } from '@agentq/config';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { waitForEnd, waitForEvent } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';

let cluster: TestCluster;
let stack: Stack;

const system = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  stack = await startStack({
    pools: ['planner', 'casual', 'file'],
    env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_CELLS: '1' },
    rules: [
      {
        match: (request) => system(request).startsWith('You are the planner'),
        reply: {
          content: `\`\`\`json\n${JSON.stringify({
            plan: [
              { id: '1', agent: 'casual', task: 'first part', need: [] },
              { id: '2', agent: 'file', task: 'write it down', need: ['1'] },
            ],
          })}\n\`\`\``,
        },
      },
      { match: (request) => system(request).startsWith('You write the final answer'), reply: { content: 'all done' } },
      { match: (request) => promptOf(request).startsWith('slow'), reply: { content: 'too late', delayMs: 30_000 } },
      {
        match: (request) => promptOf(request).includes('write') && toolResults(request) === 0,
        reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'note.txt', content: 'on a cluster' } }] },
      },
      { reply: { content: 'done' } },
    ],
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await cluster?.stop();
});

it('keys every key under its prefix as a hash tag', () => {
  const config = loadConfig({ env: { REDIS_CLUSTER_NODES: cluster.nodes, AGENTQ_REDIS_PREFIX: 'acme' } });
  expect(config.REDIS_CLUSTER_NODES).toHaveLength(3);
  expect(keyPrefix(config)).toBe('{acme}');
  expect(keyPrefix(loadConfig({ env: { AGENTQ_REDIS_PREFIX: 'acme' } }))).toBe('acme');
  expect(() => loadConfig({ env: { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_SENTINELS: '127.0.0.1:26379' } })).toThrow(
    /REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set/,
  );
  expect(() => loadConfig({ env: { REDIS_CLUSTER_NODES: 'nowhere' } })).toThrow(/"nowhere" is not host:port/);
});

it('runs a batch of every kind to the end, with every event, on a 3-master cluster', async () => {
  const ids = await stack.submit([
    ...Array.from({ length: 10 }, (_, index) => ({ prompt: `say hello ${index}`, agent: 'casual' })),
    ...Array.from({ length: 5 }, (_, index) => ({ prompt: `write a note ${index}`, agent: 'file' })),
    { prompt: 'plan this' },
  ]);
  await Promise.all(ids.map((id) => waitForEnd(stack.api.url, id)));
  const views = await Promise.all(
    ids.map(async (id) => (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body),
  );
  expect(views.map((view) => view.status)).toEqual(ids.map(() => 'completed'));
  expect(views.at(-1)).toMatchObject({ agent: 'planner', result: 'all done', progress: { done: 2, total: 2 } });
  for (const id of ids) {
    const events = (await (
      await fetch(`${stack.api.url}/v1/tasks/${id}/events`, { headers: { accept: 'application/json' } })
    ).json()) as TaskEvent[];
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)!.type).toBe('task.completed');
  }
  const listed = (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?limit=100`)).body.tasks;
  expect(listed.filter((task) => ids.includes(task.id))).toHaveLength(ids.length);
});

it('cancels a running task on the cluster', async () => {
  const [id] = await stack.submit([{ prompt: 'slow one', agent: 'casual' }]);
  await waitForEvent(stack.api.url, id!, 'llm.request');
  const response = await fetch(`${stack.api.url}/v1/tasks/${id}/cancel`, { method: 'POST' });
  expect(response.status).toBeLessThan(300);
  await waitForEnd(stack.api.url, id!);
  expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body.status).toBe('cancelled');
});

/** Per-pool settings (model), the web pool's search, and the removal of expired tasks' data. */
import type { TaskView } from '@agentq/contract';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { DoubleRequest } from '@agentq/llm';
import { connectRedis, createKeys, expireTasks, TaskStore } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { deletePrefix, freshPrefix, redisUrl } from '../helpers/redis.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { configFile } from '../helpers/config-file.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const isPlanner = (request: DoubleRequest) =>
  String(request.messages[0]?.content ?? '').startsWith('You are the planner');
const hasTool = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');

describe('pools', () => {
  it('each pool calls the model its entry in the configuration file names', async () => {
    stack = await startStack({
      env: {
        AGENTQ_CONFIG: configFile({
          planner: { model: 'big-planner' },
          agents: {
            casual: { description: 'chats', instructions: 'You are a helpful assistant.', model: 'small-chat' },
          },
        }),
      },
      rules: [
        {
          match: isPlanner,
          reply: { content: '```json\n{"plan":[{"id":"1","agent":"casual","task":"say hi","need":[]}]}\n```' },
        },
        { reply: { content: 'hi' } },
      ],
    });
    const [rootId] = await stack.submit([{ prompt: 'greet' }]);
    await waitForEnd(stack.api.url, rootId!);
    expect(stack.double.requests.map((request) => request.model)).toEqual(['big-planner', 'small-chat', 'big-planner']);
  });

  it('the web pool searches through the configured SearxNG and fetches pages', async () => {
    const searx = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      response.writeHead(200, { 'content-type': 'application/json' });
      if (url.pathname === '/search') {
        response.end(
          JSON.stringify({
            results: [
              {
                title: `About ${url.searchParams.get('q')}`,
                url: `http://127.0.0.1:${(searx.address() as AddressInfo).port}/page`,
                content: 'a snippet',
              },
            ],
          }),
        );
      } else {
        response.end('{"page": "the full page"}');
      }
    });
    await new Promise<void>((resolve) => searx.listen(0, '127.0.0.1', resolve));
    try {
      stack = await startStack({
        // The fake search engine and its page are on this machine: let http_fetch reach it.
        env: {
          AGENTQ_SEARCH_URL: `http://127.0.0.1:${(searx.address() as AddressInfo).port}`,
          AGENTQ_FETCH_PRIVATE: 'true',
        },
        rules: [
          {
            match: (request) => !hasTool(request),
            reply: { toolCalls: [{ name: 'web_search', arguments: { query: 'redis streams' } }] },
          },
          {
            match: (request) => request.messages.filter((message) => message.role === 'tool').length === 1,
            reply: (request) => ({
              toolCalls: [
                {
                  name: 'http_fetch',
                  arguments: { url: String(request.messages.at(-1)!.content).match(/http:\S+\/page/)![0] },
                },
              ],
            }),
          },
          { reply: (request) => ({ content: `read: ${String(request.messages.at(-1)!.content)}` }) },
        ],
      });
      const [taskId] = await stack.submit([{ prompt: 'look it up', agent: 'web' }]);
      await waitForEnd(stack.api.url, taskId!);
      const first = stack.double.requests[0]!;
      expect(first.tools!.map((tool) => tool.function.name)).toEqual([
        'web_search',
        'http_fetch',
        'memory_set',
        'memory_get',
        'memory_list',
        'ask_user',
      ]);
      expect(String(stack.double.requests[1]!.messages.at(-1)!.content)).toMatch(/^1\. About redis streams\n/);
      expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${taskId}`)).body.result).toBe(
        'read: HTTP 200 OK (application/json)\n\n{"page": "the full page"}',
      );
    } finally {
      searx.closeAllConnections();
      searx.close();
    }
  });
});

describe('retention', () => {
  it('removes an ended task with its subtasks, memory, events, shared memory and work directories', async () => {
    stack = await startStack({
      env: { AGENTQ_RETENTION_HOURS: '1' },
      rules: [
        {
          match: isPlanner,
          reply: { content: '```json\n{"plan":[{"id":"1","agent":"coder","task":"note it","need":[]}]}\n```' },
        },
        {
          match: (request) => !hasTool(request) && request.tools !== undefined,
          reply: {
            toolCalls: [
              { name: 'memory_set', arguments: { key: 'k', value: 'v' } },
              { name: 'write_file', arguments: { path: 'f.txt', content: 'x' } },
            ],
          },
        },
        { reply: { content: 'done' } },
      ],
    });
    const [rootId] = await stack.submit([{ prompt: 'keep for an hour' }]);
    await waitForEnd(stack.api.url, rootId!);
    const root = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${rootId}`)).body;
    const subtaskId = root.children![0]!.id;
    const redis = new Redis(stack.config.REDIS_URL);
    const keys = createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS);
    // Its keys, in its cell (the install's prefix with one).
    const taskKeys = `${keys.cellOf(rootId!).cellPrefix}:task:*`;
    const before = await redis.keys(taskKeys);
    expect(before).toEqual(
      expect.arrayContaining([
        keys.task(rootId!),
        keys.task(subtaskId),
        keys.scratchpad(rootId!),
        // Its events, packed by the run that ended it (run-events.ts).
        keys.packedEvents(subtaskId),
      ]),
    );
    expect(existsSync(path.join(stack.dataDir, 'work', subtaskId, 'f.txt'))).toBe(true);

    const store = new TaskStore(connectRedis({ url: stack.config.REDIS_URL }), keys);
    // Not yet: the hour is not over.
    expect(await expireTasks({ store })).toEqual([]);
    const removed = await expireTasks({
      store,
      now: Date.now() + 3601_000,
      onRemoved: (id) => rm(path.join(stack!.dataDir, 'work', id), { recursive: true, force: true }),
    });
    expect(removed).toEqual([rootId]);
    expect(await redis.keys(taskKeys)).toEqual([]);
    expect(await redis.zcard(keys.cellOf(rootId!).tenantTasks('default'))).toBe(0);
    expect(existsSync(path.join(stack.dataDir, 'work', subtaskId))).toBe(false);
    expect((await fetch(`${stack.api.url}/v1/tasks/${rootId}`)).status).toBe(404);
    redis.disconnect();
    store.redis.disconnect();
  });

  it('workers share the sweep, each task removed once, at well over 20,000 tasks a minute', async () => {
    const prefix = freshPrefix('sweep');
    const keys = createKeys(prefix);
    // Tasks that ended with no retention left: due at once.
    const store = new TaskStore(connectRedis({ url: redisUrl() }), keys, { retentionMs: 0 });
    const count = 6_000;
    const ids: string[] = [];
    const transitions = new Transitions(store);
    for (let start = 0; start < count; start += 1_000) {
      const created = await transitions.submit(
        Array.from({ length: 1_000 }, (_, index) => ({ prompt: `task ${start + index}`, agent: 'casual' as const })),
        { tenant: 'default' },
      );
      await Promise.all(
        created.map(async ({ id }) => {
          const task = { id, tenant: 'default', listed: true };
          await transitions.claim(task, { runToken: 'run' });
          await transitions.complete(task, { runToken: 'run', result: 'ok' });
        }),
      );
      ids.push(...created.map((task) => task.id));
    }
    const seen = new Map<string, number>();
    // As a worker does: each task's work directory removed too (here none exists, as for most tasks).
    const workRoot = path.join(tmpdir(), `agentq-sweep-${prefix}`);
    const onRemoved = async (id: string) => {
      seen.set(id, (seen.get(id) ?? 0) + 1);
      await rm(path.join(workRoot, id), { recursive: true, force: true });
    };
    const sweepers = [store, new TaskStore(connectRedis({ url: redisUrl() }), keys, { retentionMs: 0 })];
    const started = performance.now();
    const removed = await Promise.all(sweepers.map((sweeper) => expireTasks({ store: sweeper, onRemoved })));
    const seconds = (performance.now() - started) / 1000;
    expect(removed[0]!.length + removed[1]!.length).toBe(count);
    expect(removed[0]!.length).toBeGreaterThan(0);
    expect(removed[1]!.length).toBeGreaterThan(0);
    expect([...seen.values()].every((times) => times === 1)).toBe(true);
    expect(seen.size).toBe(count);
    const left = await store.redis.scan('0', 'MATCH', `${prefix}:*`, 'COUNT', 100_000);
    // (Ended here without their turn, the tasks are still named by their tenant's list: not the sweep's.
    // The order counter and the set of tenants stay.)
    expect(
      left[1].filter((key) => !key.endsWith(':tasks:order') && !key.endsWith(':tenants') && !key.includes(':fair:')),
    ).toEqual([]);
    const perMinute = Math.round((count / seconds) * 60);
    console.log(
      `retention sweep: ${count} ended tasks removed by 2 sweepers in ${seconds.toFixed(2)} s: ${perMinute} tasks a minute`,
    );
    expect(perMinute).toBeGreaterThan(20_000);
    await deletePrefix(prefix);
    sweepers.forEach((sweeper) => sweeper.redis.disconnect());
  }, 60_000);
});

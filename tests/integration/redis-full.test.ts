/**
 * A Redis that fills up: new tasks are refused before it reaches its maxmemory (AGENTQ_REDIS_FULL_PERCENT),
 * with a 503 that says why, so that Redis never refuses the writes of the tasks already stored; a
 * request that meets a Redis past its maxmemory anyway is a 503 that says so, not a 500. A Redis that
 * would evict keys past its maxmemory is said to be wrong, by the API, the worker and `agentq doctor`.
 * A Redis of the test's own, its maxmemory set a few MiB above what it holds.
 */
import type { ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { createLogger } from '@agentq/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer } from '../setup/redis-server.js';
import { spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { startStack, type Stack } from '../helpers/stack.js';

let server: ChildProcess;
let admin: Redis;
let stack: Stack;
beforeAll(async () => {
  let url: string;
  ({ url, server } = await startRedisServer());
  admin = new Redis(url);
  // No worker: what is stored stays, so the test fills Redis at its own pace.
  stack = await startStack({ pools: [], env: { REDIS_URL: url } });
});
afterAll(async () => {
  await stack.close();
  admin.disconnect();
  server.kill('SIGKILL');
});

const memory = async (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(await admin.info('memory'))![1]);
/** How many writes Redis refused for its maxmemory. */
const oomErrors = async () => Number(/^errorstat_OOM:count=(\d+)/m.exec(await admin.info('errorstats'))?.[1] ?? 0);
const post = (path: string, body: unknown) =>
  fetch(`${stack.api.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const tasks = (count: number, name: string) =>
  Array.from({ length: count }, (_, index) => ({ prompt: `${'x'.repeat(5_000)} ${name} ${index}`, agent: 'casual' }));

describe('a Redis that fills up', () => {
  it('refuses new tasks past AGENTQ_REDIS_FULL_PERCENT of its maxmemory, before Redis refuses any write, and takes them again once it has room', async () => {
    const maxBytes = (await memory('used_memory')) + 3 * 1024 * 1024;
    await admin.config('SET', 'maxmemory', String(maxBytes));
    let refused: Response | undefined;
    let accepted = 0;
    // 100 KB a submit: 3 MiB of room is gone well before 100 of them.
    for (let round = 0; round < 100 && !refused; round++) {
      const response = await post('/v1/tasks', { tasks: tasks(20, `round ${round}`) });
      if (response.status === 202) accepted += 20;
      else refused = response;
    }
    expect(accepted).toBeGreaterThan(0);
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get('retry-after')).toBe('30');
    const body = (await refused!.json()) as {
      error: { code: string; message: string; details: { usedBytes: number; maxBytes: number; percent: number } };
    };
    expect(body.error.code).toBe('unavailable');
    expect(body.error.message).toMatch(
      /^Redis holds [\d.]+ MiB of its maxmemory of [\d.]+ MiB, past AGENTQ_REDIS_FULL_PERCENT \(90%\): new tasks are refused so that the tasks already stored can run and end\. Nothing was submitted/,
    );
    expect(body.error.details).toMatchObject({ maxBytes, percent: 90 });
    // Refused once it was near the line, or the request's own size would take it past.
    expect(body.error.details.usedBytes).toBeGreaterThan(0.8 * maxBytes);
    expect(body.error.details.usedBytes).toBeLessThan(maxBytes);
    expect(await oomErrors()).toBe(0);
    // A retry is a new task too: refused once Redis itself is past the line (its maxmemory lowered).
    const [first] = (
      (await (await fetch(`${stack.api.url}/v1/tasks?limit=1`)).json()) as { tasks: Array<{ id: string }> }
    ).tasks;
    expect((await post(`/v1/tasks/${first!.id}/cancel`, {})).status).toBe(202);
    await admin.config('SET', 'maxmemory', String(Math.floor((await memory('used_memory')) * 1.05)));
    const retry = await post(`/v1/tasks/${first!.id}/retry`, {});
    expect(retry.status).toBe(503);
    expect(await retry.json()).toMatchObject({
      error: { message: expect.stringMatching(/past AGENTQ_REDIS_FULL_PERCENT \(90%\): new tasks are refused/) },
    });
    expect(await oomErrors()).toBe(0);
    // Room again (the operator gave Redis more memory): taken at once.
    await admin.config('SET', 'maxmemory', '0');
    expect((await post('/v1/tasks', { tasks: tasks(1, 'after') })).status).toBe(202);
  });

  it('answers a request that meets a Redis past its maxmemory with a 503 that says so', async () => {
    const [task] = (
      (await (await post('/v1/tasks', { tasks: tasks(1, 'to cancel') })).json()) as { tasks: Array<{ id: string }> }
    ).tasks;
    await admin.config('SET', 'maxmemory', '1');
    try {
      const cancel = await post(`/v1/tasks/${task!.id}/cancel`, {});
      expect(cancel.status).toBe(503);
      expect(await cancel.json()).toEqual({
        error: {
          code: 'unavailable',
          message:
            'Redis is past its maxmemory and refuses writes (OOM): this request was not carried out. Delete ended tasks (DELETE /v1/tasks/:id, or a bulk delete), or ask the operator to give Redis more memory, then try again.',
        },
      });
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
  });
});

describe('a Redis that evicts keys past its maxmemory', () => {
  it("is said to lose tasks: an error in the API's and the worker's logs, and a failure of agentq doctor", async () => {
    await admin.config('SET', 'maxmemory', String(512 * 1024 * 1024));
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const url = `redis://127.0.0.1:${admin.options.port}`;
    const lines: Array<{ msg: string; level: string; name: string }> = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as { msg: string; level: string; name: string });
        done();
      },
    });
    const evicting = await startStack({
      pools: ['casual'],
      env: { REDIS_URL: url },
      logger: createLogger({ name: 'agentq-test', level: 'info', format: 'json', destination }),
    });
    try {
      const warning =
        /^Redis evicts keys once it holds its maxmemory \(maxmemory-policy allkeys-lru\): a task's record, its events or its job may vanish\. Set maxmemory-policy noeviction/;
      // Said by each of the two (one logger here): the API as it starts, the worker once Redis answers.
      await expect.poll(() => lines.filter((line) => line.level === 'error' && warning.test(line.msg)).length).toBe(2);
      const doctor = spawnAgentq(['doctor'], { REDIS_URL: url, AGENTQ_DATA_DIR: evicting.dataDir });
      expect(await doctor.exited).toBe(1);
      expect(doctor.output()).toMatch(
        /FAIL +Redis evicts keys once it holds its maxmemory \(maxmemory-policy allkeys-lru\)/,
      );
      expect(doctor.output()).not.toMatch(/no maxmemory/);
    } finally {
      await evicting.close();
      await stopSpawned();
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '0');
    }
  });
});

/**
 * What a tenant's tasks wrote to Redis (tenant-bytes.ts), counted by the scripts that write and taken
 * off by the one that removes, and the byte limit of its room (tenant-room.ts), against a real Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues } from './agent-queues.js';
import { createKeys } from './keys.js';
import { connectRedis } from './redis-connection.js';
import { removeTaskTrees } from './remove-tasks.js';
import { submitTasks } from './submit-tasks.js';
import { TaskStore } from './task-store.js';
import { createdBytes } from './tenant-bytes.js';
import { NoRoomError, type RoomLimits } from './tenant-room.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('bytes');
const keys = createKeys(prefix);
let store: TaskStore;
let transitions: Transitions;
let queues: AgentQueues;

beforeAll(() => {
  store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  transitions = new Transitions(store);
  queues = createAgentQueues({ connection: store.redis, keys });
});
afterAll(async () => {
  await closeQueues(queues);
  store.redis.disconnect();
  await deletePrefix(prefix);
});

const written = async (tenant: string) => Number((await store.redis.get(keys.tenantBytes(tenant))) ?? 0);
const inputs = (count: number, prompt: string) => Array.from({ length: count }, (_, index) => ({ prompt: `${prompt} ${index}`, agent: 'casual' as const }));
const bytesOf = (list: Array<{ prompt: string }>) => list.reduce((total, input) => total + createdBytes(input), 0);

describe("a tenant's bytes", () => {
  it('counts new tasks at once, a run’s writes when its task ends, and takes them off when the tasks are removed (once, whoever removes them)', async () => {
    const submitted = inputs(2, 'é'.repeat(1_000));
    const [first, second] = await transitions.submit(submitted, { tenant: 'counted' });
    expect(await written('counted')).toBe(bytesOf(submitted));
    expect(bytesOf(submitted)).toBeGreaterThan(4_000);

    // A step of the first task's run: its message, its event and its field go on the task's count, not yet its tenant's.
    const ref = { id: first!.id, tenant: 'counted', listed: true };
    const by = { runToken: 'run-1', agent: 'casual', worker: 'w1' };
    expect((await transitions.claim(ref, by)).applied).toBe(true);
    const message = { role: 'assistant' as const, content: 'x'.repeat(10_000) };
    expect((await store.commit({ taskId: ref.id, runToken: by.runToken, messages: [message], events: [{ type: 'reasoning', data: { text: 'thinking' } }] })).applied).toBe(true);
    const running = Number(await store.redis.hget(keys.task(ref.id), 'bytes'));
    expect(running).toBeGreaterThan(createdBytes(submitted[0]!) + 10_000);
    expect(await written('counted')).toBe(bytesOf(submitted));
    // It ends: all it wrote is its tenant's now.
    expect((await transitions.complete(ref, { ...by, result: 'y'.repeat(5_000) })).applied).toBe(true);
    const ended = Number(await store.redis.hget(keys.task(ref.id), 'bytes'));
    expect(ended).toBeGreaterThan(running + 5_000);
    expect(await store.redis.hget(keys.task(ref.id), 'counted')).toBe(String(ended));
    expect(await written('counted')).toBe(ended + createdBytes(submitted[1]!));

    await transitions.cancel({ id: second!.id, tenant: 'counted', listed: true }, { from: ['queued'], reason: 'to end it' });
    const both = await written('counted');
    // Two removals at once (an expiry and a delete): taken off once.
    await Promise.all([removeTaskTrees(store, [first!.id, second!.id]), removeTaskTrees(store, [second!.id, first!.id])]);
    expect(both).toBeGreaterThan(ended + createdBytes(submitted[1]!));
    expect(await written('counted')).toBe(0);
    expect(await store.redis.exists(keys.tenantBytes('counted'))).toBe(0);
  });

  it('refuses a submit past the byte limit whole, over several calls, and stores all of one that fits', async () => {
    // 450 tasks of about 1.5 KB: three CREATE calls.
    const big = inputs(450, 'z'.repeat(1_000));
    const limits = (bytes: number): RoomLimits => ({ unfinished: 10_000, stored: 10_000, bytes });
    const refused = await submitTasks({ transitions, queues, inputs: big, tenant: 'quota', room: limits(bytesOf(big) - 1) }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoRoomError);
    expect(refused).toMatchObject({ limit: 'bytes', bytes: { used: 0, requested: bytesOf(big) } });
    expect(await store.redis.zcard(keys.tenantTasks('quota'))).toBe(0);
    expect(await written('quota')).toBe(0);

    expect(await submitTasks({ transitions, queues, inputs: big, tenant: 'quota', room: limits(bytesOf(big)) })).toHaveLength(450);
    expect(await written('quota')).toBe(bytesOf(big));
    // Nothing is left held once the later calls took their share.
    expect(await store.redis.exists(keys.tenantRoomHeldBytes('quota'))).toBe(0);
    // Full: one more task of any size is refused, and says how much is written.
    await expect(transitions.submit(inputs(1, 'small'), { tenant: 'quota', room: { limits: limits(bytesOf(big)) } })).rejects.toMatchObject({ limit: 'bytes', bytes: { used: bytesOf(big) } });
  });

  it("counts the bytes a submit's first call holds for its later calls as taken, until they take them", async () => {
    const parts = [inputs(100, 'first part'), inputs(150, 'second part')];
    const all = bytesOf(parts.flat());
    const limits: RoomLimits = { unfinished: 10_000, stored: 10_000, bytes: all + 600 };
    const claim = { id: 'submit-bytes', tasks: 250, bytes: all };
    await transitions.submit(parts[0]!, { tenant: 'held-bytes', room: { limits, claim: { ...claim, first: true } } });
    expect(Number(await store.redis.zscore(keys.tenantRoomHeldBytes('held-bytes'), 'submit-bytes'))).toBe(bytesOf(parts[1]!));
    // Without the hold a 700-byte task would fit; with it, it does not.
    const between = [{ prompt: 'b'.repeat(700 - createdBytes({ prompt: '' })), agent: 'casual' as const }];
    await expect(transitions.submit(between, { tenant: 'held-bytes', room: { limits } })).rejects.toMatchObject({ limit: 'bytes', bytes: { used: all } });
    await transitions.submit(parts[1]!, { tenant: 'held-bytes', room: { limits, claim: { ...claim, first: false } } });
    expect(await store.redis.exists(keys.tenantRoomHeldBytes('held-bytes'))).toBe(0);
    expect(await written('held-bytes')).toBe(all);
    // 600 bytes are left: a task of 600 fits, the 700 still does not.
    await expect(transitions.submit(between, { tenant: 'held-bytes', room: { limits } })).rejects.toThrow(NoRoomError);
    expect(await transitions.submit([{ prompt: 'c'.repeat(600 - createdBytes({ prompt: '' })), agent: 'casual' }], { tenant: 'held-bytes', room: { limits } })).toHaveLength(1);
  });
});

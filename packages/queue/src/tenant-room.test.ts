/** A tenant's room, taken in the calls that store its tasks: against a real Redis, with calls that race. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { closeQueues, createAgentQueues, type AgentQueues } from './agent-queues.js';
import { createKeys } from './keys.js';
import { connectRedis } from './redis-connection.js';
import { submitTasks } from './submit-tasks.js';
import { TaskStore } from './task-store.js';
import { NoRoomError, type RoomLimits } from './tenant-room.js';
import { Transitions } from './transitions.js';

const prefix = freshPrefix('room');
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

const inputs = (count: number, name: string) => Array.from({ length: count }, (_, index) => ({ prompt: `${name} ${index}`, agent: 'casual' as const }));
const stored = (tenant: string) => store.redis.zcard(keys.tenantTasks(tenant));
const holds = (tenant: string) => store.redis.exists(keys.tenantRoomHeld(tenant), keys.tenantRoomUntil(tenant));

describe("a tenant's room", () => {
  it('lets through exactly what fits when submits of one tenant come at once, each on a connection of its own', async () => {
    const limits: RoomLimits = { unfinished: 7, stored: 100 };
    const connections = Array.from({ length: 12 }, () => new Transitions(new TaskStore(connectRedis({ url: redisUrl() }), keys)));
    try {
      const outcomes = await Promise.allSettled(connections.map((own, index) => own.submit(inputs(2, `at once ${index}`), { tenant: 'race', room: { limits } })));
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(3);
      const refusals = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
      expect(refusals).toHaveLength(9);
      expect(refusals.every((reason) => reason instanceof NoRoomError && reason.limit === 'unfinished' && reason.unfinished === 6)).toBe(true);
      expect(await stored('race')).toBe(6);
    } finally {
      for (const own of connections) own.store.redis.disconnect();
    }
  });

  it('checks a submit of several calls whole in its first: all of it is stored, or none', async () => {
    // 450 tasks: three CREATE calls.
    await expect(submitTasks({ transitions, queues, inputs: inputs(450, 'too many'), tenant: 'big', room: { unfinished: 449, stored: 1_000 } })).rejects.toThrow(NoRoomError);
    expect(await stored('big')).toBe(0);
    expect(await holds('big')).toBe(0);
    expect(await submitTasks({ transitions, queues, inputs: inputs(450, 'just fits'), tenant: 'big', room: { unfinished: 450, stored: 1_000 } })).toHaveLength(450);
    expect(await stored('big')).toBe(450);
    // What the first call held for the others is all taken: nothing is left held.
    expect(await holds('big')).toBe(0);
  });

  it("counts what a submit's first call holds for its later calls as taken, until they take it or it expires", async () => {
    const limits: RoomLimits = { unfinished: 300, stored: 1_000 };
    const claim = { id: 'submit-1', tasks: 300 };
    await transitions.submit(inputs(100, 'first part'), { tenant: 'held', room: { limits, claim: { ...claim, first: true } } });
    // 100 stored and 200 held: no room for one more.
    await expect(transitions.submit(inputs(1, 'between'), { tenant: 'held', room: { limits } })).rejects.toMatchObject({ unfinished: 300, stored: 300 });
    await transitions.submit(inputs(150, 'second part'), { tenant: 'held', room: { limits, claim: { ...claim, first: false } } });
    expect(await store.redis.zscore(keys.tenantRoomHeld('held'), 'submit-1')).toBe('50');
    // The last part never comes (its process died): once its hold expires, its room is free again.
    await store.redis.zadd(keys.tenantRoomUntil('held'), 1, 'submit-1');
    expect(await transitions.submit(inputs(50, 'after the expiry'), { tenant: 'held', room: { limits } })).toHaveLength(50);
    expect(await holds('held')).toBe(0);
    // The late part finds no hold, and stores nothing.
    await expect(transitions.submit(inputs(50, 'too late'), { tenant: 'held', room: { limits, claim: { ...claim, first: false } } })).rejects.toThrow(/held no room for these tasks/);
    expect(await stored('held')).toBe(300);
  });

  it('counts ended tasks against the stored limit, and leaves other tenants their own room', async () => {
    const limits: RoomLimits = { unfinished: 10, stored: 3 };
    const tasks = await transitions.submit(inputs(3, 'kept'), { tenant: 'full', room: { limits } });
    for (const task of tasks) await transitions.cancel({ id: task.id, tenant: 'full', listed: true }, { from: ['queued'], reason: 'to end it' });
    const refused = await transitions.submit(inputs(1, 'one more'), { tenant: 'full', room: { limits } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoRoomError);
    expect(refused).toMatchObject({ limit: 'stored', unfinished: 0, stored: 3, requested: 1 });
    expect(await transitions.submit(inputs(3, 'another tenant'), { tenant: 'other', room: { limits } })).toHaveLength(3);
  });
});

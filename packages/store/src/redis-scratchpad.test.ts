/** A planned task's shared memory on a real Redis, through the tool a model calls. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_NOTES, memoryTools, type ToolContext } from '@agentq/tools';
import type { Redis } from 'ioredis';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { connectRedis } from './redis-connection.js';
import { createRedisScratchpad } from './redis-scratchpad.js';

const prefix = freshPrefix('scratchpad');
let redis: Redis;

beforeAll(() => {
  redis = connectRedis({ url: redisUrl() });
});
afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

it('holds at most MAX_NOTES notes: a new one past them is refused, and the model is told what to do instead', async () => {
  const scratchpad = createRedisScratchpad({ redis, key: `${prefix}:scratchpad:root` });
  const context = {
    workdir: '/nonexistent',
    signal: new AbortController().signal,
    timeoutMs: 1_000,
    outputLimit: 10_000,
    scratchpad,
  } as ToolContext;
  const memorySet = memoryTools.find((tool) => tool.name === 'memory_set')!;
  for (let index = 0; index < MAX_NOTES; index++)
    expect(await scratchpad.set(`note ${index}`, 'x'.repeat(1_000))).toBe(true);
  const refused = await memorySet.run({ key: 'one more', value: 'v' }, context);
  expect(refused).toEqual({
    ok: false,
    output: expect.stringMatching(/^Not saved: the shared memory holds 100 notes, its most\. Overwrite a note/),
  });
  expect(await scratchpad.get('one more')).toBeUndefined();
  expect(await redis.hlen(`${prefix}:scratchpad:root`)).toBe(MAX_NOTES);
  // A note already there may still change.
  expect(await memorySet.run({ key: 'note 7', value: 'changed' }, context)).toMatchObject({ ok: true });
  expect(await scratchpad.get('note 7')).toBe('changed');
});

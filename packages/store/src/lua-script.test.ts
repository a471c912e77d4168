/**
 * A script on an auto-pipelined connection, in the same turn of the event loop as another command:
 * the pipeline ioredis made for that turn must already have the script's command (it copies the
 * commands a connection has when it makes a pipeline).
 */
import { afterAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { claimDue } from './claim-due.js';
import { createKeys } from './keys.js';
import { connectRedis } from './redis-connection.js';

const prefix = freshPrefix('lua-script');
afterAll(() => deletePrefix(prefix));

it('runs a script first used in the same turn as a pipelined command', async () => {
  const redis = connectRedis({ url: redisUrl(), pipelined: true });
  try {
    const keys = createKeys(prefix);
    await redis.zadd(keys.cells[0]!.toCompact, 0, 'due');
    // One turn: a plain command makes the turn's pipeline, then a script is used for the first time.
    const [plain, claimed] = await Promise.all([
      redis.zcard(keys.cells[0]!.toCompact),
      claimDue(redis, keys.cells[0]!.toCompact, { now: Date.now(), count: 10, leaseMs: 60_000 }),
    ]);
    expect(plain).toBe(1);
    expect(claimed).toEqual(['due']);
  } finally {
    redis.disconnect();
  }
});

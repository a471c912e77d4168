/**
 * A script on an auto-pipelined connection, in the same turn of the event loop as another command:
 * the pipeline ioredis made for that turn must already have the script's command (it copies the
 * commands a connection has when it makes a pipeline). Late keys: sent only by the calls that touch them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from '../../../tests/helpers/redis.js';
import { claimDue } from './claim-due.js';
import { createKeys } from './keys.js';
import { luaScript } from './lua-script.js';
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

it('sends late keys only when a call gives them, and keeps the keys after them in their places', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'agentq-lua-'));
  writeFileSync(
    path.join(dir, 'late.lua'),
    'return {a, b or false, c or false, KEYS_REST, #KEYS, KEYS[KEYS_REST] or false}',
  );
  const script = luaScript({
    dir: pathToFileURL(`${dir}/`),
    name: 'late',
    keys: ['a'],
    lateKeys: ['b', 'c'],
    args: [],
  });
  const redis = connectRedis({ url: redisUrl() });
  try {
    const [a, b, c] = [`${prefix}:a`, `${prefix}:b`, `${prefix}:c`];
    expect(await script.run(redis, { keys: { a }, args: {} })).toEqual([a, null, null, 4, 1, null]);
    expect(
      await script.run(redis, { keys: { a }, lateKeys: { b, c }, args: {}, restKeys: [`${prefix}:rest`] }),
    ).toEqual([a, b, c, 4, 4, `${prefix}:rest`]);
    // Without the late keys, a key after them would take their place.
    expect(() => script.run(redis, { keys: { a }, args: {}, restKeys: [`${prefix}:rest`] })).toThrow(
      /need the late keys too/,
    );
  } finally {
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * The write path of a task's state, as two Lua scripts (scripts/commit.lua and scripts/create.lua:
 * what each takes and answers is written at its top), so that everything in a change lands together
 * or not at all. docs/storage.md, "The commit script", says why it is built this way.
 */
import { PRIORITY_STEP } from './fair-lists.js';
import { luaScript } from './lua-script.js';
import { STATUS_SPAN, UNFINISHED_MAX_SCORE } from './task-index.js';
import { HOLD_MS } from './tenant-room.js';

const dir = new URL('../scripts/', import.meta.url);

/** What every commit may touch. */
const COMMIT_KEY_NAMES = ['taskKey', 'messagesKey', 'eventsKey', 'rootKey', 'tenantBytesKey', 'spendKey'] as const;
/**
 * What only a change of status, a pack, a claim or a lease touches: a step's commits leave them out
 * (8 keys fewer, about 9K Redis instructions a commit).
 */
const COMMIT_LATE_KEY_NAMES = [
  'packedKey',
  'expiryKey',
  'toCompactKey',
  'tenantTasksKey',
  'webhooksKey',
  'webhooksDueKey',
  'webhookTenantsKey',
  'webhooksPendingKey',
] as const;

/**
 * What a task may have written before a run for the run to pack its events at its end: those lines are
 * stored as they are (the script cannot deflate), so a larger task is compacted instead (run-events.ts).
 */
const PLAIN_MAX = 64 * 1024;

/**
 * A record a claim reads is answered as one string when its task wrote at most this many bytes: cheaper
 * for Redis than a string a field, up to about this size (commit.lua).
 */
const JOINED_MAX = 1024;

export const COMMIT = luaScript({
  dir,
  name: 'commit',
  keys: COMMIT_KEY_NAMES,
  lateKeys: COMMIT_LATE_KEY_NAMES,
  args: ['payloadJson', 'taskId', 'tenant', 'eventsChannel', 'lineHead', 'lineRoot'],
  constants: { STATUS_SPAN, PLAIN_MAX, JOINED_MAX },
});

/** How many keys COMMIT names (a lease's key comes after them). */
export const COMMIT_KEYS = COMMIT_KEY_NAMES.length + COMMIT_LATE_KEY_NAMES.length;

export const CREATE = luaScript({
  dir,
  name: 'create',
  keys: ['orderCounterKey'],
  args: ['payloadJson'],
  constants: { STATUS_SPAN, PRIORITY_STEP, UNFINISHED_MAX_SCORE, HOLD_MS },
});

/**
 * A task store and its transitions on a fresh key prefix of the run's Redis, for a test file: made
 * when the file is read, disconnected and cleaned up after its tests.
 */
import { connectRedis, createKeys, TaskStore, type Keys } from '@agentq/store';
import { Transitions } from '@agentq/tasks';
import { afterAll } from 'vitest';
import { deletePrefix, freshPrefix, redisUrl } from './redis.js';

export function storeOnPrefix(label: string): {
  prefix: string;
  keys: Keys;
  store: TaskStore;
  transitions: Transitions;
} {
  const prefix = freshPrefix(label);
  const keys = createKeys(prefix);
  const store = new TaskStore(connectRedis({ url: redisUrl() }), keys);
  afterAll(async () => {
    store.redis.disconnect();
    await deletePrefix(prefix);
  });
  return { prefix, keys, store, transitions: new Transitions(store) };
}

/**
 * Room in a root's tree for the children `delegate` calls start (its `delegate.maxDescendants`): taken
 * whole or not at all, in one script, and given back for children an earlier try made already.
 */
import { luaScript } from './lua-script.js';
import type { TaskStore } from './task-store.js';

const TAKE_TREE_ROOM = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'take-tree-room',
  keys: ['rootKey'],
  args: ['count', 'max'],
});

/** Takes room for `count` children; answers whether it did, and how many the tree had started before. */
export async function takeTreeRoom(
  store: TaskStore,
  rootId: string,
  count: number,
  max: number,
): Promise<{ taken: boolean; before: number }> {
  const [after, before] = (await TAKE_TREE_ROOM.run(store.redis, {
    keys: { rootKey: store.keys.task(rootId) },
    args: { count, max },
  })) as [number, number];
  return { taken: after !== -1, before };
}

/** Gives back room taken for children that turned out to exist (made by an earlier try of the call). */
export async function giveBackTreeRoom(store: TaskStore, rootId: string, count: number): Promise<void> {
  await store.redis.hincrby(store.keys.task(rootId), 'descendants', -count);
}

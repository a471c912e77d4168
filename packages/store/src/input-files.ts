/** The files a task was given on submit, as CREATE stored them (create.lua): path and content. */
import type { TaskStore } from './task-store.js';

export async function inputFiles(store: TaskStore, taskId: string): Promise<Array<{ path: string; content: Buffer }>> {
  const hash = await store.redis.hgetallBuffer(store.keys.inputs(taskId));
  return Object.entries(hash)
    .map(([path, content]) => ({ path, content }))
    .sort((a, b) => a.path.localeCompare(b.path));
}

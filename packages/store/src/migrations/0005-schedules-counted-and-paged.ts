/**
 * Storage version 5: schedules counted and paged. A schedule's task held its files' contents (base64,
 * in its JSON), its bytes counted toward no limit, and its tenant's list was scored by creation time,
 * at the install's home. Now its files are a hash of their own (read only when it fires), its record
 * says its bytes, which its tenant's byte counter holds (limits.mb), and its `order`, which scores its
 * tenant's list and the list of every tenant's; all in the schedules' cell (keys.ts: with one cell, the
 * same keys as before). Each schedule of an earlier version is written as this one's, oldest first, in
 * one script that counts it (save-schedule.lua, `migrate`: once, however often this runs); with several
 * cells its runs are copied and its old keys removed after. A process of an earlier version still
 * running writes its schedules the old way: the next start does this again for them.
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../keys.js';
import { ScheduleStore, type ScheduleFile } from '../schedule-store.js';
import { scheduleBytes } from '../tenant-bytes.js';
import { scanKeys } from './0001-task-lists-by-status-score.js';

export async function countAndPageSchedules(redis: Redis, keys: Keys): Promise<number> {
  const home = `${keys.prefix}:tenant:`;
  const lists = await scanKeys(redis, `${home}*:schedules`);
  const found: Array<{ id: string; tenant: string; list: string; at: number }> = [];
  for (const list of lists) {
    const tenant = list.slice(home.length, -':schedules'.length);
    const entries = await redis.zrange(list, 0, -1, 'WITHSCORES');
    for (let index = 0; index < entries.length; index += 2)
      found.push({ id: entries[index]!, tenant, list, at: Number(entries[index + 1]) });
  }
  found.sort((a, b) => a.at - b.at);
  const store = new ScheduleStore(redis, keys);
  let moved = 0;
  for (const { id, tenant, list } of found) {
    const oldKey = `${keys.prefix}:schedule:${id}`;
    const hash = await redis.hgetall(oldKey);
    const elsewhere = oldKey !== keys.schedule(id);
    // Gone (with several cells, moved by a run that stopped before it left its list), or, with one
    // cell (the same key), this version's already.
    if (!hash.id) {
      if (elsewhere) await redis.zrem(list, id);
      continue;
    }
    if (!elsewhere && hash.order !== undefined) continue;
    const { task, files } = splitFiles(hash.task ?? '{}');
    const fileBytes = files.reduce((sum, file) => sum + file.content.length, 0);
    await store.save(
      {
        id,
        tenant: hash.tenant ?? tenant,
        ...(hash.cron ? { cron: hash.cron } : {}),
        ...(hash.timezone ? { timezone: hash.timezone } : {}),
        ...(hash.every ? { every: Number(hash.every) } : {}),
        overlap: hash.overlap === 'allow' ? 'allow' : 'skip',
        paused: hash.paused === 'true',
        task,
        createdAt: hash.createdAt ?? new Date().toISOString(),
        ...(hash.lastTaskId ? { lastTaskId: hash.lastTaskId } : {}),
        bytes: scheduleBytes(task, fileBytes),
      },
      { mode: 'migrate', files },
    );
    if (elsewhere) {
      const runs = await redis.lrange(`${oldKey}:runs`, 0, -1);
      if (runs.length)
        await redis
          .multi()
          .del(keys.scheduleRuns(id))
          .rpush(keys.scheduleRuns(id), ...runs)
          .exec();
      await redis.del(oldKey, `${oldKey}:runs`);
      await redis.zrem(list, id);
    }
    moved++;
  }
  return moved;
}

/** A task as an earlier version stored it, its files' contents out of it: what this one stores. */
function splitFiles(stored: string): { task: string; files: ScheduleFile[] } {
  const task = JSON.parse(stored) as Record<string, unknown>;
  if (!Array.isArray(task.files)) return { task: stored, files: [] };
  const files = (task.files as Array<{ path?: unknown; content?: unknown }>).map((file) => ({
    path: String(file.path),
    content: Buffer.from(String(file.content ?? ''), 'base64'),
  }));
  const named = files.map((file) => ({ path: file.path, size: file.content.length }));
  return { task: JSON.stringify({ ...task, files: named }), files };
}

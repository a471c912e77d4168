/**
 * Searching prompts (a list with `q`) in Redis, in bounded reads. Redis runs one command at a time, so
 * every byte a search reads is a wait for every other client: a page of a search reads at most
 * SEARCH_PAGE_BYTES of prompts (their sizes asked first with HSTRLEN, which reads none), in reads of at
 * most SEARCH_READ_BYTES each, so another client's command waits behind one read at most. A prompt is
 * written once, at create, so the size read is the size matched.
 */
import type { Redis } from 'ioredis';
import { cellPipeline } from './cell-pipeline.js';
import type { Keys } from './keys.js';
import { luaScript } from './lua-script.js';

/** The most prompt bytes one page of a search reads; it then ends, with a cursor to the rest. */
export const SEARCH_PAGE_BYTES = 4 * 1024 * 1024;
/** The most prompt bytes one pipeline of a search reads (about 2 ms of Redis here; 1 MiB let another client wait 6x its idle time). */
export const SEARCH_READ_BYTES = 256 * 1024;

/** Whether a task's prompt holds a text, read in Redis. */
const MATCH_PROMPT = luaScript({
  dir: new URL('../scripts/', import.meta.url),
  name: 'match-prompt',
  keys: ['taskKey'],
  args: ['needle', 'status'],
});

export interface PromptSearch<Entry> {
  /** The first of the entries, as many as the bytes allowed (all of them when they fit). */
  read: Entry[];
  /** Those of `read` that matched. */
  matches: Entry[];
  /** The prompt bytes read. */
  bytes: number;
}

/**
 * The first `entries` whose prompts fit in `budgetBytes`, and those of them whose prompt holds `needle`
 * (ASCII letters lower case; '' for any: no prompt is read) and, given one, that have `status`. The
 * first entry is read even past the budget when `atLeastOne` (a page always moves on).
 */
export async function searchPrompts<Entry extends { id: string }>(options: {
  redis: Redis;
  keys: Keys;
  entries: readonly Entry[];
  needle: string;
  status: string;
  budgetBytes: number;
  atLeastOne: boolean;
}): Promise<PromptSearch<Entry>> {
  const { redis, keys, entries, needle, status } = options;
  const { groups, bytes } = needle === '' ? { groups: [[...entries]], bytes: 0 } : await readsWithin(options);
  const read: Entry[] = [];
  const matches: Entry[] = [];
  // One pipeline a read, one after the other: other clients' commands run between them.
  for (const group of groups) {
    const pipeline = cellPipeline(redis);
    for (const { id } of group)
      void MATCH_PROMPT.run(pipeline, { keys: { taskKey: keys.task(id) }, args: { needle, status } });
    const replies = (await pipeline.exec()) ?? [];
    group.forEach((entry, index) => {
      const [error, matched] = replies[index] ?? [];
      if (error) throw error;
      if (matched === 1) matches.push(entry);
    });
    read.push(...group);
  }
  return { read, matches, bytes };
}

/** The first entries whose prompts fit the budget, in groups of at most SEARCH_READ_BYTES (one entry at least). */
async function readsWithin<Entry extends { id: string }>(options: {
  redis: Redis;
  keys: Keys;
  entries: readonly Entry[];
  budgetBytes: number;
  atLeastOne: boolean;
}): Promise<{ groups: Entry[][]; bytes: number }> {
  const sizes = cellPipeline(options.redis);
  for (const { id } of options.entries) sizes.hstrlen(options.keys.task(id), 'prompt');
  const replies = (await sizes.exec()) ?? [];
  const groups: Entry[][] = [];
  let group: Entry[] = [];
  let inGroup = 0;
  let total = 0;
  for (const [index, entry] of options.entries.entries()) {
    const [error, reply] = replies[index] ?? [];
    if (error) throw error;
    const size = Number(reply ?? 0);
    const first = index === 0 && options.atLeastOne;
    if (total + size > options.budgetBytes && !first) break;
    if (group.length && inGroup + size > SEARCH_READ_BYTES) {
      groups.push(group);
      group = [];
      inGroup = 0;
    }
    group.push(entry);
    inGroup += size;
    total += size;
  }
  if (group.length) groups.push(group);
  return { groups, bytes: total };
}

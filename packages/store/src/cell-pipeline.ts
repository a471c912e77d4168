/**
 * A pipeline whose commands may fall in several cells. On a Redis Cluster a pipeline goes to one node
 * (ioredis refuses one whose keys are on several), and cells are spread over the masters: there, the
 * commands are sent as one pipeline per hash tag (each cell's keys share one), all at once, and the
 * replies put back in the order the commands were made. On one Redis it is a plain pipeline.
 */
import type { ChainableCommander, Redis } from 'ioredis';
import { isCluster } from './pub-sub.js';

type Reply = [Error | null, unknown];

/** A pipeline for commands whose first argument is their key (a script's: its first key). */
export function cellPipeline(redis: Redis): ChainableCommander {
  if (!isCluster(redis)) return redis.pipeline();
  const byTag = new Map<string, { pipeline: ChainableCommander; positions: number[] }>();
  let count = 0;
  const proxy: ChainableCommander = new Proxy({} as ChainableCommander, {
    // A script runs on it when it is a command of the connection (lua-script.ts).
    has: (_, name) => name in redis,
    get(_, name: string | symbol) {
      if (name === 'exec') return () => exec();
      if (name === 'length') return count;
      if (typeof name === 'symbol' || name === 'then') return undefined;
      return (...args: unknown[]) => {
        // A script's command (lua-script.ts) starts with its number of keys, then its keys.
        const tag = hashTag(String(name.startsWith('agentq_') ? args[1] : args[0]));
        let group = byTag.get(tag);
        if (!group) {
          group = { pipeline: redis.pipeline(), positions: [] };
          byTag.set(tag, group);
        }
        group.positions.push(count++);
        (group.pipeline as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args);
        return proxy;
      };
    },
  });
  const exec = async (): Promise<Reply[]> => {
    const replies: Reply[] = new Array<Reply>(count);
    await Promise.all(
      [...byTag.values()].map(async ({ pipeline, positions }) => {
        const answered = (await pipeline.exec()) ?? [];
        positions.forEach((position, index) => (replies[position] = answered[index] as Reply));
      }),
    );
    return replies;
  };
  return proxy;
}

/** A key's hash tag, or the key itself when it has none (as Redis Cluster hashes it). */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

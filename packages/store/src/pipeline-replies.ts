/** A pipeline's replies, in order; the first command that failed fails the whole. */
import type { ChainableCommander } from 'ioredis';

export async function execPipeline(pipeline: ChainableCommander): Promise<unknown[]> {
  return ((await pipeline.exec()) ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/**
 * What the benchmarks share: agentq's own processes against REDIS_URL under a fresh key prefix, with
 * the OpenAI-wire double as a zero-latency model, and a clean-up that leaves nothing behind.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { startOpenAIDouble } from '@agentq/llm';

const MAIN = new URL('../apps/cli/dist/main.js', import.meta.url).pathname;

/**
 * Starts the double with `rules`, `agentq api` and `workers` worker processes (all pools).
 * @returns the API's URL, a Redis client on the same prefix, and `stop()`.
 */
export async function startAgentq({ name, rules, workers = 1, concurrency = '20' }) {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `agentq-bench-${name}-${process.pid}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
  const double = await startOpenAIDouble({ rules });
  const env = { ...process.env, PORT: '0', REDIS_URL: redisUrl, AGENTQ_REDIS_PREFIX: prefix, AGENTQ_DATA_DIR: dataDir, OPENAI_BASE_URL: double.baseURL, AGENTQ_MODEL: 'bench', AGENTQ_CONCURRENCY: concurrency };
  const children = [];
  const start = (args, ready) =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
        const match = out.match(ready);
        if (match) resolve(match);
      });
    });
  const [, url] = await start(['api'], /listening on (http\S+)/);
  await Promise.all(Array.from({ length: workers }, () => start(['worker'], /serving/)));
  const redis = new Redis(redisUrl);
  return {
    url,
    redis,
    prefix,
    double,
    /** Resolves once `count` submitted tasks ended. */
    async waitForEnded(count) {
      for (;;) {
        const [done, failed] = await Promise.all([redis.zcard(`${prefix}:tasks:status:completed`), redis.zcard(`${prefix}:tasks:status:failed`)]);
        if (done + failed >= count) return { done, failed };
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async stop() {
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(children.map((child) => new Promise((resolve) => child.once('exit', resolve))));
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
      redis.disconnect();
      await double.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The p-th percentile of a list of numbers. */
export function percentile(list, p) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

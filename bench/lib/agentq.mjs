/**
 * agentq as a user runs it, for the benchmarks: `agentq api` and one `agentq worker` process against
 * the benchmark's Redis and model, each with the probe loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAgentqApi, startAgentqWorker } from './processes.mjs';

export async function startAgentq({ redisUrl, modelURL, prefix = 'agentq-bench', pools = 'casual', concurrency = 50, env = {} }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentq-bench-'));
  const common = { REDIS_URL: redisUrl, AGENTQ_REDIS_PREFIX: prefix, AGENTQ_DATA_DIR: dataDir, OPENAI_BASE_URL: modelURL, OPENAI_API_KEY: 'bench', AGENTQ_MODEL: 'bench', ...env };
  // No pools: the API alone (what is submitted stays queued).
  const [api, worker] = await Promise.all([startAgentqApi(common), pools ? startAgentqWorker(common, { pools, concurrency }) : undefined]);
  return {
    api,
    worker,
    prefix,
    /** Submits tasks, 10,000 a request at most; resolves with their ids. */
    async submit(tasks) {
      const ids = [];
      for (let start = 0; start < tasks.length; start += 10_000) {
        const response = await fetch(`${api.url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tasks: tasks.slice(start, start + 10_000) }) });
        if (response.status !== 202) throw new Error(`submit: ${response.status} ${await response.text()}`);
        ids.push(...(await response.json()).tasks.map((task) => task.id));
      }
      return ids;
    },
    /** How many submitted tasks ended so far (completed or failed). */
    async ended(redis) {
      const [completed, failed] = await Promise.all([redis.zcard(`${prefix}:tasks:status:completed`), redis.zcard(`${prefix}:tasks:status:failed`)]);
      return { completed, failed, ended: completed + failed };
    },
    async stop() {
      await Promise.all([api.stop(), worker?.stop()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Resolves once `count()` reaches `target`, polling every `everyMs`. */
export async function until(count, target, everyMs = 10) {
  for (;;) {
    if ((await count()) >= target) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
